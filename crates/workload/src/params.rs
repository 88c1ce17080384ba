//! Workload parameters (`-p KEY=VALUE`, YCSB's convention): each workload
//! declares its keys with defaults and help; an unknown key is an error
//! naming it.

use std::collections::BTreeMap;

use crate::UsageError;

/// One parameter a workload accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    /// The key.
    pub key: &'static str,
    /// Its default value.
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// Parameter values: defaults overridden by what the user gave.
#[derive(Clone, Debug)]
pub struct Params {
    workload: &'static str,
    values: BTreeMap<&'static str, String>,
    order: Vec<&'static str>,
}

impl Params {
    /// Merges `given` over the defaults of `defs`.
    pub fn new(
        workload: &'static str,
        defs: &'static [ParamDef],
        given: &[(String, String)],
    ) -> Result<Params, UsageError> {
        let mut values: BTreeMap<&'static str, String> = defs
            .iter()
            .map(|d| (d.key, d.default.to_string()))
            .collect();
        for (k, v) in given {
            let d = defs.iter().find(|d| d.key == k).ok_or_else(|| {
                let keys: Vec<&str> = defs.iter().map(|d| d.key).collect();
                UsageError(format!(
                    "unknown parameter '{k}' for workload {workload} (known: {})",
                    keys.join(", ")
                ))
            })?;
            values.insert(d.key, v.clone());
        }
        Ok(Params {
            workload,
            values,
            order: defs.iter().map(|d| d.key).collect(),
        })
    }

    fn raw(&self, key: &str) -> &str {
        self.values.get(key).map(String::as_str).unwrap_or("")
    }

    fn bad(&self, key: &str, what: &str) -> UsageError {
        UsageError(format!(
            "parameter '{key}={}' of workload {}: expected {what}",
            self.raw(key),
            self.workload
        ))
    }

    /// A string value.
    pub fn str(&self, key: &str) -> &str {
        self.raw(key)
    }

    /// A whole number (underscores allowed: `1_000_000`).
    pub fn u64(&self, key: &str) -> Result<u64, UsageError> {
        self.raw(key)
            .replace('_', "")
            .parse()
            .map_err(|_| self.bad(key, "a whole number"))
    }

    /// A number.
    pub fn f64(&self, key: &str) -> Result<f64, UsageError> {
        self.raw(key)
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.bad(key, "a number"))
    }

    /// A yes/no value.
    pub fn bool(&self, key: &str) -> Result<bool, UsageError> {
        match self.raw(key) {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(self.bad(key, "true or false")),
        }
    }

    /// One of a named enum's values (see `named!`), by its name.
    pub fn one_of<T: Copy>(
        &self,
        key: &str,
        all: &[T],
        name: impl Fn(T) -> &'static str,
    ) -> Result<T, UsageError> {
        let v = self.raw(key);
        all.iter().copied().find(|x| name(*x) == v).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|x| name(*x)).collect();
            self.bad(key, &format!("one of {}", names.join(", ")))
        })
    }

    /// Every (key, value), in declaration order, for the record.
    pub fn effective(&self) -> Vec<(String, String)> {
        self.order
            .iter()
            .map(|k| (k.to_string(), self.raw(k).to_string()))
            .collect()
    }
}

/// Parses `-p KEY=VALUE` strings.
pub fn parse_pairs(ps: &[String]) -> Result<Vec<(String, String)>, UsageError> {
    ps.iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| UsageError(format!("-p '{p}': expected KEY=VALUE")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &[ParamDef] = &[
        ParamDef {
            key: "docs",
            default: "100",
            help: "",
        },
        ParamDef {
            key: "dist",
            default: "uniform",
            help: "",
        },
    ];

    #[test]
    fn defaults_overrides_and_errors() {
        let p = Params::new("w", DEFS, &[("docs".into(), "1_000".into())]).unwrap();
        assert_eq!(p.u64("docs").unwrap(), 1000);
        use crate::dist::Distribution;
        assert_eq!(
            p.one_of("dist", Distribution::ALL, Distribution::name)
                .unwrap(),
            Distribution::Uniform
        );
        let p = Params::new("w", DEFS, &[("dist".into(), "zipf".into())]).unwrap();
        let e = p
            .one_of("dist", Distribution::ALL, Distribution::name)
            .unwrap_err();
        assert!(e.0.contains("one of uniform, zipfian, latest"), "{e}");
        let e = Params::new("w", DEFS, &[("nope".into(), "1".into())]).unwrap_err();
        assert!(e.0.contains("'nope'"), "{e}");
        let p = Params::new("w", DEFS, &[("docs".into(), "x".into())]).unwrap();
        assert!(p.u64("docs").unwrap_err().0.contains("docs=x"));
        assert!(parse_pairs(&["a".into()]).is_err());
    }
}
