//! The Python sets of the navigation accuracy harness, shared by the benches that measure on
//! them (`nav_accuracy`, `nav_lsp`).

/// Packages and modules copied into the evaluation repository.
pub const TREE: &[&str] = &[
    "json",
    "email",
    "http",
    "logging",
    "urllib",
    "concurrent",
    "collections",
    "importlib",
    "argparse.py",
    "functools.py",
    "textwrap.py",
    "shlex.py",
];
/// Files whose names are sampled as queries (aliases, relative imports, re-exports, overrides).
pub const EVAL: &[&str] = &[
    "json/__init__.py",
    "json/decoder.py",
    "json/encoder.py",
    "email/message.py",
    "email/parser.py",
    "email/feedparser.py",
    "http/client.py",
    "logging/handlers.py",
    "urllib/request.py",
    "concurrent/futures/thread.py",
    "argparse.py",
    "textwrap.py",
];

/// The packages, pinned: (requirement, import name).
pub const PACKAGES: &[(&str, &str)] = &[
    ("requests==2.32.3", "requests"),
    ("flask==3.0.3", "flask"),
    ("click==8.1.7", "click"),
    ("jinja2==3.1.4", "jinja2"),
    ("werkzeug==3.0.4", "werkzeug"),
    ("itsdangerous==2.2.0", "itsdangerous"),
    ("attrs==24.2.0", "attr"),
];
