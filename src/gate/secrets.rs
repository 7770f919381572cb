//! Recognises credentials in added lines: cloud and forge tokens by their documented prefixes,
//! private key blocks, AWS secret access keys, and assignments to a credential-like name whose
//! value looks random — quoted anywhere (`api_key = "…"`, `"token": "…"`), or unquoted as a
//! whole line (`.env`'s `DB_PASSWORD=…`, YAML's `client_secret: …`, `export …`).
//!
//! A finding must never repeat the secret (review output lands in terminals, CI logs and git
//! notes), so every match is reported through [`redact`]: a short prefix and the length.

use std::sync::OnceLock;

use regex_automata::meta::Regex;

/// Which kind of credential a match looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    AwsAccessKey,
    AwsSecretKey,
    GithubToken,
    AnthropicKey,
    OpenAiKey,
    PrivateKey,
    GenericAssignment,
}

impl SecretKind {
    /// Returns a human name for the kind, used in findings.
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::AwsAccessKey => "AWS access key id",
            SecretKind::AwsSecretKey => "AWS secret access key",
            SecretKind::GithubToken => "GitHub token",
            SecretKind::AnthropicKey => "Anthropic API key",
            SecretKind::OpenAiKey => "OpenAI API key",
            SecretKind::PrivateKey => "private key block",
            SecretKind::GenericAssignment => "high-entropy secret assignment",
        }
    }
}

/// A credential found in one line: what it looks like and its redacted form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    pub kind: SecretKind,
    /// Safe to show: prefix, ellipsis, length; never the secret.
    pub redacted: String,
}

struct Patterns {
    /// (kind, regex, capture group holding the secret)
    list: Vec<(SecretKind, Regex, usize)>,
}

fn patterns() -> Option<&'static Patterns> {
    static PATTERNS: OnceLock<Option<Patterns>> = OnceLock::new();
    PATTERNS
        .get_or_init(|| {
            // Patterns stay within ASCII classes: the regex engine is built without Unicode
            // tables (no `\b`, no Unicode case folding), which keeps the dependency tree as is.
            // Order matters: the Anthropic prefix `sk-ant-` must win over OpenAI's `sk-`.
            let specs: [(SecretKind, &str, usize); 9] = [
                (
                    SecretKind::AwsAccessKey,
                    r"(?:^|[^A-Z0-9])((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?:[^A-Z0-9]|$)",
                    1,
                ),
                (
                    SecretKind::GithubToken,
                    r"(?:^|[^A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,255})",
                    1,
                ),
                (
                    SecretKind::GithubToken,
                    r"(?:^|[^A-Za-z0-9_])(github_pat_[A-Za-z0-9_]{22,255})",
                    1,
                ),
                (
                    SecretKind::AnthropicKey,
                    r"(?:^|[^A-Za-z0-9_\-])(sk-ant-[A-Za-z0-9_\-]{20,})",
                    1,
                ),
                (
                    SecretKind::OpenAiKey,
                    r"(?:^|[^A-Za-z0-9_\-])(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})",
                    1,
                ),
                (
                    SecretKind::PrivateKey,
                    r"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)",
                    1,
                ),
                (
                    SecretKind::AwsSecretKey,
                    r#"(?i-u:aws)[A-Za-z0-9_.\-]*(?i-u:secret|private)[A-Za-z0-9_.\-]*["']?[ \t]*(?:=|:|:=|=>)[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
                    1,
                ),
                (
                    SecretKind::GenericAssignment,
                    r#"(?i-u:api[_\-]?key|apikey|secret[_\-]?key|client[_\-]?secret|access[_\-]?token|auth[_\-]?token|secret|token|password|passwd)["']?[ \t]*(?:=|:|:=|=>)[ \t]*["']([A-Za-z0-9_\-+/=.~!@#$%^&*]{16,})["']"#,
                    1,
                ),
                // A whole line `NAME=value` / `name: value` (.env, YAML, INI, shell), unquoted.
                (
                    SecretKind::GenericAssignment,
                    r#"^[ \t]*(?:export[ \t]+)?-?[ \t]*[A-Za-z0-9_.\-]*(?i-u:api[_\-]?key|apikey|secret|token|password|passwd|pwd|access[_\-]?key|private[_\-]?key|credential)[A-Za-z0-9_.\-]*[ \t]*(?:=|:)[ \t]*([A-Za-z0-9_\-+/=.~!@$%^&*]{16,})[ \t]*(?:#.*)?$"#,
                    1,
                ),
            ];
            let mut list = Vec::new();
            for (kind, re, group) in specs {
                list.push((kind, Regex::new(re).ok()?, group));
            }
            Some(Patterns { list })
        })
        .as_ref()
}

/// Returns the credentials found in `line`, each redacted.
pub fn scan_line(line: &str) -> Vec<SecretMatch> {
    matches(line).into_iter().map(|(_, m)| m).collect()
}

/// Returns `text` with every credential in it replaced by its redacted form, for showing
/// text that may quote one — a model reviewer's finding, say — where secrets must not go.
pub fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut found = matches(line);
        found.sort_by_key(|(r, _)| r.start);
        let mut at = 0;
        for (range, m) in found {
            if m.kind == SecretKind::PrivateKey {
                continue;
            }
            out.push_str(&line[at..range.start]);
            out.push_str(&m.redacted);
            at = range.end;
        }
        out.push_str(&line[at..]);
    }
    out
}

/// Returns each credential in `line` with the form that replaces it when shown.
fn scan_raw(line: &str) -> Vec<(String, String)> {
    matches(line)
        .into_iter()
        .map(|(range, m)| (line[range].to_string(), m.redacted))
        .collect()
}

/// Returns the credentials found in `line` with their byte ranges, each redacted.
fn matches(line: &str) -> Vec<(std::ops::Range<usize>, SecretMatch)> {
    let Some(patterns) = patterns() else {
        return Vec::new();
    };
    let mut found: Vec<(std::ops::Range<usize>, SecretMatch)> = Vec::new();
    for (kind, re, group) in &patterns.list {
        for caps in re.captures_iter(line) {
            let Some(span) = caps.get_group(*group) else {
                continue;
            };
            let range = span.start..span.end;
            // A span already reported by an earlier, more specific pattern is not reported again.
            if found
                .iter()
                .any(|(r, _)| r.start < range.end && range.start < r.end)
            {
                continue;
            }
            let secret = &line[range.clone()];
            let assigned = matches!(
                kind,
                SecretKind::GenericAssignment | SecretKind::AwsSecretKey
            );
            if assigned && !looks_random(secret) {
                continue;
            }
            let redacted = if *kind == SecretKind::PrivateKey {
                // The armour line itself is not secret and tells the reader what was found.
                secret.to_string()
            } else {
                redact(secret)
            };
            found.push((
                range,
                SecretMatch {
                    kind: *kind,
                    redacted,
                },
            ));
        }
    }
    found
}

/// Returns `text` with every credential [`scan_line`] finds in it replaced by its redacted form.
pub fn redact_text(text: &str) -> String {
    let mut out = text.to_string();
    for m in scan_raw(text) {
        out = out.replace(&m.0, &m.1);
    }
    out
}

/// Returns `text` made safe to show in a finding: every credential redacted, and control
/// characters (terminal escape sequences included) shown as `?`, line breaks kept.
pub fn safe_to_show(text: &str) -> String {
    redact_text(text)
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '?'
            } else {
                c
            }
        })
        .collect()
}

/// Returns a form of `secret` safe to print: its first four characters (at most a quarter of
/// it), an ellipsis and its length, e.g. `ghp_…(40 chars)`.
pub fn redact(secret: &str) -> String {
    let n = secret.chars().count();
    let shown: String = secret.chars().take((n / 4).min(4)).collect();
    format!("{shown}…({n} chars)")
}

/// Returns true if and only if `value` looks like a generated secret rather than a placeholder,
/// a variable reference or a word: long enough, mixed characters, Shannon entropy ≥ 3.5 bits.
fn looks_random(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let placeholders = [
        "example",
        "xxxx",
        "changeme",
        "your",
        "dummy",
        "placeholder",
        "redacted",
        "${",
        "{{",
        "<",
        "env(",
        "process.env",
        "os.environ",
    ];
    if placeholders.iter().any(|p| lower.contains(p)) {
        return false;
    }
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = value.bytes().any(|b| b.is_ascii_alphabetic());
    has_digit && has_alpha && entropy(value) >= 3.5
}

/// Returns the Shannon entropy of `s` in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(line: &str) -> Vec<SecretKind> {
        scan_line(line).into_iter().map(|m| m.kind).collect()
    }

    #[test]
    fn recognises_documented_token_formats() {
        assert_eq!(
            kinds("aws_access_key_id = AKIAIOSFODNN7EXAMPL3"),
            vec![SecretKind::AwsAccessKey]
        );
        let ghp = format!("token: ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
        assert_eq!(kinds(&ghp), vec![SecretKind::GithubToken]);
        let pat = format!("github_pat_11ABCDEFG0{}", "a1B2c3D4e5F6g7H8i9J0k1");
        assert_eq!(kinds(&pat), vec![SecretKind::GithubToken]);
        let ant = "ANTHROPIC=sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2";
        assert_eq!(kinds(ant), vec![SecretKind::AnthropicKey]);
        let oai = "key = sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1";
        assert_eq!(kinds(oai), vec![SecretKind::OpenAiKey]);
        assert_eq!(
            kinds("-----BEGIN OPENSSH PRIVATE KEY-----"),
            vec![SecretKind::PrivateKey]
        );
        assert_eq!(
            kinds(r#"api_key = "q8Zr2LmX9vT4bN7cW1sK5dF3""#),
            vec![SecretKind::GenericAssignment]
        );
    }

    #[test]
    fn recognises_unquoted_assignments_and_aws_secret_keys() {
        let aws = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8rT2mX9v";
        assert_eq!(kinds(aws), vec![SecretKind::AwsSecretKey]);
        assert_eq!(
            kinds("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8rT2mX9v"),
            vec![SecretKind::AwsSecretKey]
        );
        for line in [
            "DB_PASSWORD=q8Zr2LmX9vT4bN7cW1sK5dF3",
            "export STRIPE_API_KEY=q8Zr2LmX9vT4bN7cW1sK5dF3",
            "  client_secret: q8Zr2LmX9vT4bN7cW1sK5dF3",
            "- token: q8Zr2LmX9vT4bN7cW1sK5dF3  # prod",
        ] {
            assert_eq!(kinds(line), vec![SecretKind::GenericAssignment], "{line}");
        }
        // Code and placeholders stay quiet.
        assert!(kinds("let token = self.next_token_for(kind);").is_empty());
        assert!(kinds("PASSWORD=changeme-please-1234567").is_empty());
        assert!(kinds("token: ${{ secrets.GITHUB_TOKEN }}").is_empty());
        assert!(kinds("TOKEN_URL=https://example.com/oauth/token").is_empty());
    }

    #[test]
    fn ignores_placeholders_and_ordinary_code() {
        assert!(kinds(r#"api_key = "your-api-key-goes-here""#).is_empty());
        assert!(kinds(r#"password = "${DB_PASSWORD_FROM_ENV}""#).is_empty());
        assert!(kinds(r#"token = "aaaaaaaaaaaaaaaaaaaa""#).is_empty());
        assert!(kinds("let task_id = ask-ant-colony;").is_empty());
        assert!(kinds("fn main() { println!(\"hello\"); }").is_empty());
    }

    #[test]
    fn mask_replaces_every_secret_and_keeps_the_rest() {
        let key = "AKIAQWERTYUIOPASDFGH";
        let text = format!("line one\nexport AWS_ACCESS_KEY_ID={key} # deploy\nlast");
        let masked = mask(&text);
        assert!(!masked.contains(key), "{masked}");
        assert_eq!(
            masked,
            format!(
                "line one\nexport AWS_ACCESS_KEY_ID={} # deploy\nlast",
                redact(key)
            )
        );
        assert_eq!(mask("nothing secret here"), "nothing secret here");
    }

    #[test]
    fn never_echoes_the_secret() {
        let secret = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2";
        let found = scan_line(&format!("key={secret}"));
        assert_eq!(found.len(), 1);
        assert!(!found[0].redacted.contains("Zx9Yw8"), "{:?}", found[0]);
        assert_eq!(redact("ghp_0123456789abcdef"), "ghp_…(20 chars)");
        assert_eq!(redact("abc"), "…(3 chars)");
    }
}
