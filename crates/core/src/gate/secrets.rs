//! Recognises credentials in added lines: cloud, forge, chat and registry tokens by their
//! documented prefixes, private key blocks, AWS secret access keys, passwords in URLs and
//! connection strings, and assignments to a credential-like name whose
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
    GitlabToken,
    GoogleApiKey,
    GoogleOauthSecret,
    SlackToken,
    SlackWebhook,
    NpmToken,
    UrlPassword,
    ConnectionStringPassword,
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
            SecretKind::GitlabToken => "GitLab token",
            SecretKind::GoogleApiKey => "Google API key",
            SecretKind::GoogleOauthSecret => "Google OAuth client secret",
            SecretKind::SlackToken => "Slack token",
            SecretKind::SlackWebhook => "Slack webhook URL",
            SecretKind::NpmToken => "npm token",
            SecretKind::UrlPassword => "password in a URL",
            SecretKind::ConnectionStringPassword => "password in a connection string",
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
            let specs: &[(SecretKind, &str, usize)] = &[
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
                    SecretKind::GitlabToken,
                    r"(?:^|[^A-Za-z0-9_])((?:glpat|gldt|glrt|glptt|glft|glsoat|glcbt|glimt|glagent|gloas|glffct|glcsr)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*)",
                    1,
                ),
                (
                    SecretKind::GitlabToken,
                    r"(?:^|[^A-Za-z0-9_])(GR1348941[A-Za-z0-9_\-]{20,})",
                    1,
                ),
                (
                    SecretKind::GoogleApiKey,
                    r"(?:^|[^A-Za-z0-9_\-])(AIza[A-Za-z0-9_\-]{35})(?:[^A-Za-z0-9_\-]|$)",
                    1,
                ),
                (
                    SecretKind::GoogleOauthSecret,
                    r"(?:^|[^A-Za-z0-9_\-])(GOCSPX-[A-Za-z0-9_\-]{24,})",
                    1,
                ),
                (
                    SecretKind::SlackToken,
                    r"(?:^|[^A-Za-z0-9_\-])(xox[abposre]-[0-9]+-[A-Za-z0-9\-]{8,})",
                    1,
                ),
                (
                    SecretKind::SlackToken,
                    r"(?:^|[^A-Za-z0-9_\-])(xapp-[0-9]+-[A-Za-z0-9\-]{10,})",
                    1,
                ),
                (
                    SecretKind::SlackWebhook,
                    r"(hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{16,})",
                    1,
                ),
                (
                    SecretKind::NpmToken,
                    r"(?:^|[^A-Za-z0-9_])(npm_[A-Za-z0-9]{36})(?:[^A-Za-z0-9]|$)",
                    1,
                ),
                // `scheme://user:password@host`: the password, whatever it looks like (people
                // choose them), unless it is a placeholder (`${PASSWORD}`, `<password>`, `pass`).
                (
                    SecretKind::UrlPassword,
                    r#"(?:^|[^A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^ \t"'<>/?#@:]*:([^ \t"'<>/?#]{3,})@[A-Za-z0-9\[]"#,
                    1,
                ),
                // ADO.NET/ODBC/JDBC-style `…;Password=…;` (only where the line names a server,
                // host, database or user id too: see `connection_string`).
                (
                    SecretKind::ConnectionStringPassword,
                    r#"(?:^|[;"' \t])(?i-u:password|pwd)[ \t]*=[ \t]*([A-Za-z0-9!#%&*+,\-./:=?@^_|~]{3,})[ \t]*(?:;|"|'|$)"#,
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
                list.push((*kind, Regex::new(re).ok()?, *group));
            }
            Some(Patterns { list })
        })
        .as_ref()
}

/// Returns the credentials found in `line`, each redacted.
///
/// A line with NUL characters is scanned a second time with them (and the replacement
/// characters a byte order mark decodes to) taken out: that is how a line of a UTF-16 file
/// (little or big endian, with or without a byte order mark) reads once its ASCII is decoded,
/// and every credential format recognised here is ASCII.
pub fn scan_line(line: &str) -> Vec<SecretMatch> {
    let mut found: Vec<SecretMatch> = matches(line).into_iter().map(|(_, m)| m).collect();
    if line.contains('\0') {
        let decoded: String = line
            .chars()
            .filter(|c| !matches!(c, '\0' | '\u{FFFD}'))
            .collect();
        for (_, m) in matches(&decoded) {
            if !found.contains(&m) {
                found.push(m);
            }
        }
    }
    found
}

/// Returns true if and only if `line` reads as a connection string: `key=value;` pairs, one
/// of which names a server, host, database or user.
fn connection_string(line: &str) -> bool {
    let lower = line.to_ascii_lowercase().replace([' ', '\t'], "");
    lower.contains(';')
        && [
            "server=",
            "datasource=",
            "host=",
            "hostname=",
            "address=",
            "database=",
            "initialcatalog=",
            "userid=",
            "uid=",
            "user=",
            "username=",
            "dsn=",
        ]
        .iter()
        .any(|k| lower.contains(k))
}

/// Builds the credential patterns now, so that their first use does not wait for them:
/// compiling them takes a few milliseconds, which a run spends on a thread while it starts.
pub fn prepare() {
    let _ = patterns();
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
            let chosen = matches!(
                kind,
                SecretKind::UrlPassword
                    | SecretKind::ConnectionStringPassword
                    | SecretKind::SlackWebhook
            );
            if chosen && is_placeholder(secret) {
                continue;
            }
            if *kind == SecretKind::ConnectionStringPassword && !connection_string(line) {
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
    if is_template(value) {
        return false;
    }
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = value.bytes().any(|b| b.is_ascii_alphabetic());
    has_digit && has_alpha && entropy(value) >= 3.5
}

/// Returns true if and only if `value` is a variable reference, a template or a stand-in word
/// (`${…}`, `{{…}}`, `<…>`, `example`, `changeme`, `your-…`) rather than a value.
fn is_template(value: &str) -> bool {
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
    placeholders.iter().any(|p| lower.contains(p))
}

/// Returns true if and only if a password `value` (one people choose, so not judged by how
/// random it looks) stands for one rather than being one: a template ([`is_template`]),
/// `$NAME`, `%s`, `{…}`, a word such as `password` or `pass`, or one character repeated
/// (`****`).
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let words = ["pass", "passwd", "pwd", "secret", "token", "pw", "user"];
    let mut chars = value.chars();
    let first = chars.next();
    is_template(value)
        || lower.contains("password")
        || words.contains(&lower.as_str())
        || value.starts_with('$')
        || value.starts_with('%')
        || value.contains('{')
        || chars.all(|c| Some(c) == first)
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
    fn recognises_gitlab_google_slack_and_npm_tokens() {
        let cases = [
            ("GITLAB=glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm", SecretKind::GitlabToken),
            ("t: gldt-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", SecretKind::GitlabToken),
            (
                "runner glrt-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2",
                SecretKind::GitlabToken,
            ),
            (
                "key: AIzaSyD3x9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
                SecretKind::GoogleApiKey,
            ),
            (
                "\"secret\": \"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\"",
                SecretKind::GoogleOauthSecret,
            ),
            (
                "SLACK=xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
                SecretKind::SlackToken,
            ),
            (
                "xoxp-17653672481-19874698323-20497213245-d1d3f1a5b7c9e2f4",
                SecretKind::SlackToken,
            ),
            (
                "app xapp-1-A0123ABCDEF-1234567890-abc123",
                SecretKind::SlackToken,
            ),
            (
                "url = https://hooks.slack.com/services/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",
                SecretKind::SlackWebhook,
            ),
            (
                "//registry.npmjs.org/:_authToken=npm_q8Zr2LmX9vT4bN7cW1sK5dF3aB3dE5fG7hJ9",
                SecretKind::NpmToken,
            ),
        ];
        for (line, kind) in cases {
            assert_eq!(kinds(line), vec![kind], "{line}");
        }
    }

    #[test]
    fn recognises_passwords_in_urls_and_connection_strings() {
        for line in [
            "remote = https://deploy:hunter2x@git.example.org/repo.git",
            "DATABASE_URL=postgres://app:s3cr3t-Pw@db.internal:5432/app",
            "mongo: mongodb+srv://admin:Tr0ub4dor@cluster0.abcde.mongodb.net/prod",
            "redis://:hunter22@cache:6379/0",
        ] {
            assert_eq!(kinds(line), vec![SecretKind::UrlPassword], "{line}");
        }
        let ado = r#"conn = "Server=db1;Database=app;User Id=sa;Password=Tr0ub4dor&3;""#;
        assert_eq!(kinds(ado), vec![SecretKind::ConnectionStringPassword]);
        let found = scan_line("postgres://app:s3cr3t-Pw@db/app");
        assert_eq!(found[0].redacted, redact("s3cr3t-Pw"));
        assert_eq!(
            mask("postgres://app:s3cr3t-Pw@db/app"),
            format!("postgres://app:{}@db/app", redact("s3cr3t-Pw"))
        );
    }

    #[test]
    fn urls_and_strings_without_a_password_are_not_flagged() {
        for line in [
            "let url = \"http://localhost:8080/api\";",
            "ssh user@host",
            "git clone git@github.com:org/repo.git",
            "ssh://git@host:22/repo.git",
            "https://user:${PASSWORD}@host/x",
            "https://user:<password>@host/x",
            "https://user:password@host/x",
            "https://user:pass@host/x",
            "postgres://user:$DB_PASS@localhost/db",
            "https://{{user}}:{{pass}}@host",
            "see https://example.com/a@b and http://host:80@",
            "const password = req.body.password;",
            "Password=changeme;",
            "Server=db;Password=<password>;",
            "Server=db;Password={0};",
            "url: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "xoxb-not-a-real-token",
            "let key = AIzaShort;",
        ] {
            assert!(kinds(line).is_empty(), "{line}: {:?}", kinds(line));
        }
    }

    #[test]
    fn utf16_lines_are_decoded_before_they_are_scanned() {
        let token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";
        let line = format!("token={token}");
        let le: String = line.chars().flat_map(|c| [c, '\0']).collect();
        let be: String = line.chars().flat_map(|c| ['\0', c]).collect();
        let bom = format!("\u{FFFD}\u{FFFD}{le}");
        for text in [le, be, bom] {
            let found = scan_line(&text);
            assert_eq!(found.len(), 1, "{text:?}");
            assert_eq!(found[0].kind, SecretKind::GithubToken);
            assert!(!found[0].redacted.contains("aB3dE5"), "{:?}", found[0]);
        }
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
