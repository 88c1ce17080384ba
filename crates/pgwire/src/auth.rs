//! How a PostgreSQL connection may prove who it is: the methods a server
//! may ask for (libpq's `require_auth` names), the set a URL allows, and
//! the one-line refusals both of ampbench's PostgreSQL clients give (the
//! `postgres` crate's, watched by ampbench-address's stream, and
//! [`crate::Conn`]): a refused request ends the connection before the
//! client answers it, so the password is never sent.

/// Ways a server may ask for the password (libpq's `require_auth`
/// names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// No authentication asked (`trust`).
    None,
    /// The password in clear text (`password`).
    Password,
    /// An MD5 hash of it (`md5`).
    Md5,
    /// SCRAM-SHA-256, where the password never travels
    /// (`scram-sha-256`).
    Scram,
}

impl Auth {
    /// Every method, in libpq's order.
    pub const ALL: [Auth; 4] = [Auth::Password, Auth::Md5, Auth::Scram, Auth::None];

    /// libpq's name of the method.
    pub fn name(self) -> &'static str {
        match self {
            Auth::None => "none",
            Auth::Password => "password",
            Auth::Md5 => "md5",
            Auth::Scram => "scram-sha-256",
        }
    }

    /// A bit of [`Allowed`].
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The methods a connection accepts: a set of [`Auth`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowed(u8);

impl Allowed {
    /// What a URL without `require_auth` accepts: everything but the
    /// password in clear text, which is allowed only under TLS whose
    /// server certificate is verified (`verified`).
    pub fn default_for(verified: bool) -> Allowed {
        let mut a = Allowed(Auth::Md5.bit() | Auth::Scram.bit() | Auth::None.bit());
        if verified {
            a.0 |= Auth::Password.bit();
        }
        a
    }

    /// Parses libpq's `require_auth`: a comma-separated list of
    /// methods, or of methods each prefixed by `!` (all but those).
    pub fn parse(v: &str) -> Result<Allowed, String> {
        let words: Vec<&str> = v.split(',').map(str::trim).collect();
        let negated = words.iter().filter(|w| w.starts_with('!')).count();
        if negated != 0 && negated != words.len() {
            return Err(format!(
                "require_auth={v}: either methods or methods each after '!', not both"
            ));
        }
        let mut bits = 0u8;
        for w in &words {
            let name = w.trim_start_matches('!');
            let a = Auth::ALL.iter().find(|a| a.name() == name).ok_or_else(|| {
                format!(
                    "require_auth={v}: '{name}' is not one of password, md5, scram-sha-256, none (gss and sspi are not spoken here)"
                )
            })?;
            bits |= a.bit();
        }
        Ok(Allowed(if negated > 0 { !bits & 0x0f } else { bits }))
    }

    /// The accepted methods, comma-separated, as `require_auth` takes them.
    pub fn names(self) -> String {
        Auth::ALL
            .iter()
            .filter(|a| self.has(**a))
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// True when `a` is accepted.
    pub fn has(self, a: Auth) -> bool {
        self.0 & a.bit() != 0
    }
}

/// What an authentication request ('R' message) asks, by its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// AuthenticationOk: the client is in.
    Ok,
    /// A method to answer.
    Method(Auth),
    /// A step of a SASL exchange already begun (continue, final).
    Sasl,
    /// A method this client does not speak (GSS, SSPI, Kerberos…).
    Unknown(u32),
}

impl Request {
    /// The request a code stands for.
    pub fn of(code: u32) -> Request {
        match code {
            0 => Request::Ok,
            3 => Request::Method(Auth::Password),
            5 => Request::Method(Auth::Md5),
            10 => Request::Method(Auth::Scram),
            11 | 12 => Request::Sasl,
            other => Request::Unknown(other),
        }
    }
}

/// Why a request for `a` is refused under `allowed` (None: answered).
pub fn refusal(allowed: Allowed, a: Auth) -> Option<String> {
    if allowed.has(a) {
        return None;
    }
    Some(match a {
        Auth::Password => "the server asked for the password in clear text; refused (it would travel readable: use TLS with a verified server, sslmode=verify-full, or allow it with require_auth=password)".to_string(),
        a => format!("the server asked for {} authentication, which require_auth does not allow; refused", a.name()),
    })
}

/// The refusal of a method this client does not speak.
pub fn unknown(code: u32) -> String {
    format!(
        "the server asked for authentication method {code}, which this client does not speak; refused"
    )
}

/// The refusal of a server that lets the client in without asking, when
/// `allowed` does not have [`Auth::None`] (None: accepted).
pub fn let_in(allowed: Allowed) -> Option<String> {
    (!allowed.has(Auth::None)).then(|| {
        "the server let this client in without authentication, which require_auth does not allow; refused".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_auth_reads_as_libpq_does() {
        let a = Allowed::parse("scram-sha-256").unwrap();
        assert!(a.has(Auth::Scram) && !a.has(Auth::Password) && !a.has(Auth::None));
        let a = Allowed::parse("!password,!md5").unwrap();
        assert!(a.has(Auth::Scram) && a.has(Auth::None) && !a.has(Auth::Md5));
        assert!(Allowed::parse("password,!md5").is_err());
        assert!(Allowed::parse("gss").unwrap_err().contains("gss"));
        assert!(!Allowed::default_for(false).has(Auth::Password));
        assert!(Allowed::default_for(true).has(Auth::Password));
    }

    #[test]
    fn requests_and_refusals() {
        assert_eq!(Request::of(3), Request::Method(Auth::Password));
        assert_eq!(Request::of(7), Request::Unknown(7));
        let plain = Allowed::default_for(false);
        assert!(
            refusal(plain, Auth::Password)
                .unwrap()
                .contains("clear text")
        );
        assert!(refusal(plain, Auth::Scram).is_none());
        let scram = Allowed::parse("scram-sha-256").unwrap();
        assert!(refusal(scram, Auth::Md5).unwrap().contains("md5"));
        assert!(let_in(scram).is_some() && let_in(plain).is_none());
        assert!(unknown(7).contains("method 7"));
    }
}
