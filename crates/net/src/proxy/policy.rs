//! The client's policy file: which scheduler serves which application connection (Guo et al.,
//! MobiCom 2017 demo: "a policy file on the mobile device configures the scheduler to be used
//! for each application"). Rules are tried in order; the first match wins.
//!
//! ```toml
//! default = "dems-f"
//!
//! [[rule]]
//! host = "*.video.example"   # destination host: exact, or "*." + suffix
//! port = 443                 # destination port
//! scheduler = "minrtt"
//!
//! [[rule]]
//! app_port = 8080            # local port of the application's socket
//! scheduler = "redundant"
//! ```

use serde::Deserialize;

use mpsched_core::sched::backup::with_marked_paths;
use mpsched_core::sched::{build, SchedError};

/// The scheduler when no policy file is given (Guo et al., MobiCom 2017, §7.1: DEMS-F).
pub const DEFAULT_SCHEDULER: &str = "dems-f";

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub app_port: Option<u16>,
    pub scheduler: String,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    #[serde(default = "default_sched")]
    pub default: String,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
}

fn default_sched() -> String {
    DEFAULT_SCHEDULER.to_string()
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            default: default_sched(),
            rules: Vec::new(),
        }
    }
}

impl Policy {
    /// Parse and check every scheduler name against the client's paths (`backup_paths`: the
    /// names marked `,backup`).
    pub fn parse(
        text: &str,
        origin: &str,
        path_names: &[String],
        backup_paths: &[&str],
    ) -> Result<Policy, String> {
        let p: Policy = toml::from_str(text)
            .map_err(|e| format!("{origin}: {}", e.to_string().replace('\n', " ").trim()))?;
        p.check(origin, path_names, backup_paths)?;
        Ok(p)
    }

    /// Every scheduler name builds on these paths.
    pub fn check(
        &self,
        origin: &str,
        path_names: &[String],
        backup_paths: &[&str],
    ) -> Result<(), String> {
        let caps = vec![0.0; path_names.len()];
        let builds = |name: &str| {
            let name = with_marked_paths(name, backup_paths.iter().copied());
            build(&name, path_names, &caps)
                .map(|_| ())
                .map_err(|e| match e {
                    SchedError::BackupPaths(_) => {
                        "backup: no path is marked backup (--path NAME=IFACE|SRCIP,backup) and \
                     none is named (backup:NAME)"
                            .to_string()
                    }
                    e => e.to_string(),
                })
        };
        builds(&self.default).map_err(|e| format!("{origin}: default: {e}"))?;
        for (i, r) in self.rules.iter().enumerate() {
            builds(&r.scheduler)
                .map_err(|e| format!("{origin}: rule {}: scheduler: {e}", i + 1))?;
            if r.host.is_none() && r.port.is_none() && r.app_port.is_none() {
                return Err(format!(
                    "{origin}: rule {}: needs host, port or app_port",
                    i + 1
                ));
            }
        }
        Ok(())
    }

    /// The scheduler for a connection from local port `app_port` to `host:port`.
    pub fn scheduler_for(&self, host: &str, port: u16, app_port: u16) -> &str {
        self.rules
            .iter()
            .find(|r| {
                r.host.as_deref().is_none_or(|h| host_matches(h, host))
                    && r.port.is_none_or(|p| p == port)
                    && r.app_port.is_none_or(|p| p == app_port)
            })
            .map_or(&self.default, |r| &r.scheduler)
    }
}

fn host_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => host
            .strip_suffix(suffix)
            .is_some_and(|h| h.ends_with('.') && h.len() > 1),
        None => pattern.eq_ignore_ascii_case(host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["wifi".into(), "lte".into()]
    }

    const TEXT: &str = r#"
default = "dems-f"
[[rule]]
host = "*.video.example"
scheduler = "minrtt"
[[rule]]
port = 22
scheduler = "single:wifi"
[[rule]]
app_port = 8080
scheduler = "redundant"
"#;

    #[test]
    fn first_matching_rule_picks_the_scheduler() {
        let p = Policy::parse(TEXT, "p.toml", &names(), &[]).unwrap();
        assert_eq!(p.scheduler_for("cdn.video.example", 443, 1), "minrtt");
        assert_eq!(p.scheduler_for("video.example", 22, 1), "single:wifi");
        assert_eq!(p.scheduler_for("a.b", 80, 8080), "redundant");
        assert_eq!(p.scheduler_for("a.b", 80, 1), "dems-f");
    }

    #[test]
    fn unknown_scheduler_names_the_rule() {
        let e = Policy::parse(
            "[[rule]]\nport = 1\nscheduler = \"nope\"\n",
            "p.toml",
            &names(),
            &[],
        )
        .unwrap_err();
        assert!(e.starts_with("p.toml: rule 1: scheduler:"), "{e}");
    }

    #[test]
    fn bare_backup_needs_a_marked_path() {
        let text = "default = \"backup\"\n";
        let e = Policy::parse(text, "p.toml", &names(), &[]).unwrap_err();
        assert!(
            e.starts_with("p.toml: default: backup: no path is marked"),
            "{e}"
        );
        assert!(Policy::parse(text, "p.toml", &names(), &["lte"]).is_ok());
        assert!(Policy::parse("default = \"backup:lte\"\n", "p.toml", &names(), &[]).is_ok());
    }

    #[test]
    fn unknown_key_is_refused() {
        let e = Policy::parse("defualt = \"minrtt\"\n", "p.toml", &names(), &[]).unwrap_err();
        assert!(e.contains("defualt"), "{e}");
    }

    #[test]
    fn rule_without_a_condition_is_refused() {
        let e =
            Policy::parse("[[rule]]\nscheduler = \"rr\"\n", "p.toml", &names(), &[]).unwrap_err();
        assert!(e.contains("needs host"), "{e}");
    }
}
