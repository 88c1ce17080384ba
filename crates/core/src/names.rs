//! Names as enums: [`named!`] declares an enum whose values have one name
//! each (the command line's, the results file's and JSON's), with `ALL`,
//! `name`, `parse` (an unknown name is a [`crate::UsageError`] listing the
//! valid ones), `Display` and `Serialize`. Steps, operation kinds, figures,
//! statuses and distributions are declared with it, so no code matches on
//! their strings.

/// Declares a named enum; see the module doc. `$what` names the kind of
/// value in errors (`ycsb step`, `distribution`, …).
#[macro_export]
macro_rules! named {
    (
        $(#[$m:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $( $(#[doc = $doc:literal])* $var:ident = $s:literal ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[doc = $doc])* $var ),+
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// Its name: on the command line, in the results file and in JSON.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$var => $s),+
                }
            }

            /// What it is: its doc comment, one line.
            pub fn about(self) -> &'static str {
                match self {
                    $($name::$var => concat!($($doc),*).trim_start()),+
                }
            }

            /// Its position in [`Self::ALL`].
            pub fn index(self) -> usize {
                self as usize
            }

            /// Parses a name; the error lists the valid ones.
            pub fn parse(s: &str) -> Result<$name, $crate::UsageError> {
                Self::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    $crate::UsageError(format!(
                        "unknown {} '{}' (known: {})",
                        $what,
                        s,
                        Self::names().join(", ")
                    ))
                })
            }

            /// Every name, in order.
            pub fn names() -> Vec<&'static str> {
                Self::ALL.iter().map(|v| v.name()).collect()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl $crate::serde::Serialize for $name {
            fn serialize<S: $crate::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}

crate::named! {
    /// The outcome of a run or a step, as stored in the results file.
    pub enum Status: "status" {
        /// Still running, or the process died before it ended (a step's
        /// figures then come from its completed intervals).
        Running = "running",
        /// Ended normally.
        Done = "done",
        /// Ended with an error (recorded beside it).
        Failed = "failed",
        /// Stopped by Ctrl-C; what was measured is kept.
        Interrupted = "interrupted",
        /// A run of several clients some of which died or failed: the
        /// others' figures are kept, the run is short of theirs.
        Partial = "partial",
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.name()).unwrap(), *s);
            assert_eq!(s.to_string(), s.name());
        }
        let e = Status::parse("finished").unwrap_err().0;
        assert_eq!(
            e,
            "unknown status 'finished' (known: running, done, failed, interrupted, partial)"
        );
        assert_eq!(serde_json::to_string(&Status::Done).unwrap(), "\"done\"");
    }
}
