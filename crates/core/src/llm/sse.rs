//! A reader of server-sent events (`text/event-stream`), the framing both wire formats stream in.

use std::io::BufRead;

/// One event: its `event:` name (empty when the server sent none) and its joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Reads events one at a time from a buffered byte stream.
pub(super) struct SseReader<R> {
    inner: R,
    line: Vec<u8>,
}

impl<R: BufRead> SseReader<R> {
    pub fn new(inner: R) -> Self {
        SseReader {
            inner,
            line: Vec::new(),
        }
    }

    /// Returns the next event, `None` at the end of the stream.
    ///
    /// An event cut off by the end of the stream (no blank line after it) is still returned,
    /// so the caller's own end-of-answer check decides whether the stream was complete.
    pub fn next_event(&mut self) -> std::io::Result<Option<SseEvent>> {
        let mut event = String::new();
        let mut data: Option<String> = None;
        loop {
            self.line.clear();
            let n = self.inner.read_until(b'\n', &mut self.line)?;
            if n == 0 {
                return Ok(data.map(|data| SseEvent { event, data }));
            }
            let text = String::from_utf8_lossy(&self.line);
            let text = text.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                if let Some(data) = data.take() {
                    return Ok(Some(SseEvent { event, data }));
                }
                event.clear();
                continue;
            }
            if text.starts_with(':') {
                continue;
            }
            let (field, value) = match text.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (text, ""),
            };
            match field {
                "event" => event = value.to_string(),
                "data" => match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_string()),
                },
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_on_blank_lines_and_keep_names() {
        let text =
            ": comment\nevent: a\ndata: {\"x\":1}\n\ndata: one\ndata: two\r\n\r\ndata: [DONE]";
        let mut r = SseReader::new(text.as_bytes());
        let e = r.next_event().unwrap().unwrap();
        assert_eq!((e.event.as_str(), e.data.as_str()), ("a", "{\"x\":1}"));
        let e = r.next_event().unwrap().unwrap();
        assert_eq!((e.event.as_str(), e.data.as_str()), ("", "one\ntwo"));
        assert_eq!(r.next_event().unwrap().unwrap().data, "[DONE]");
        assert!(r.next_event().unwrap().is_none());
    }
}
