//! A server's `--set` settings: how their keys are spelled, and values
//! that cannot open the server or inject a line into its configuration.

/// A server's settings: how its keys are spelled (letters, digits, `_`
/// and `extra`) and what a bad key is not (`noun`: "a my.cnf setting").
/// Which keys ampbench keeps to itself is `engine::guard`'s to say.
pub struct Settings {
    /// Characters a key may hold beside letters, digits and `_`.
    pub extra: char,
    /// What a malformed key is not.
    pub noun: &'static str,
}

/// Checks one `--set` setting of a server: the key is a configuration
/// word, the value is one line with no control character (it goes into a
/// configuration file or an argument) and is not a section header
/// (`[client]`).
pub fn check_setting(
    kind: &str,
    key: &str,
    value: &str,
    rules: &Settings,
) -> Result<(), crate::UsageError> {
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == rules.extra)
    {
        return Err(crate::UsageError(format!(
            "invalid option '{kind}.{key}': not {}",
            rules.noun
        )));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(crate::UsageError(format!(
            "--set {kind}.{key}: the value holds a newline or another control character"
        )));
    }
    let v = value.trim();
    if v.starts_with('[') && v.ends_with(']') {
        return Err(crate::UsageError(format!(
            "--set {kind}.{key}={value}: a section header is not a value"
        )));
    }
    Ok(())
}

/// Quotes a path for a POSIX shell (a command the server runs through
/// one, e.g. PostgreSQL's `archive_command`).
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
