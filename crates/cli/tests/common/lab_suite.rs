//! `suite run --lab` over a lab of this test process: the multi-host
//! tests' fixture (agents started by the console, one per lab host).

use super::Tmp;
use serde_json::Value;

/// A lab of this test process, its state and results database in a
/// directory of its own; taken down when dropped, however the test ended
/// (`suite run --lab` takes down a lab it brought up; this covers a run
/// that did not get that far).
pub struct LabSuite {
    pub tmp: Tmp,
    pub name: String,
}

impl LabSuite {
    /// `None` where the test is skipped (not root; see [`super::can_run`]).
    /// The lab's name starts with IOTOLL_TEST_LAB_TAG's letter, else
    /// `letter`, so test runs side by side keep apart.
    pub fn new(tag: &str, letter: char) -> Option<LabSuite> {
        let tmp = Tmp::as_root()?;
        let name = super::lab_name(tag, letter);
        Some(LabSuite { tmp, name })
    }

    /// `suite run SUITE --lab LAB` over a lab of `hosts` with the lab-wide
    /// `keys`: the stored run, checked against the published schema, or
    /// what the run said and stored when it failed.
    pub fn run(&self, hosts: &[&str], keys: &str, suite: &str) -> Result<Value, String> {
        self.run_env(hosts, keys, suite, &[])
    }

    /// [`LabSuite::run`] with these environment variables (test hooks).
    pub fn run_env(
        &self,
        hosts: &[&str],
        keys: &str,
        suite: &str,
        env: &[(&str, &str)],
    ) -> Result<Value, String> {
        let d = &self.tmp;
        let lab: String = (hosts.iter())
            .map(|h| format!("[[host]]\nname = \"{h}\"\n"))
            .collect();
        let lab = d.file(
            "lab.toml",
            format!("name = \"{}\"\n{keys}\n{lab}", self.name),
        );
        let suite = d.file("s.toml", suite);
        let out = (d.suite_run(&[&suite, "--lab", &lab, "--quiet"]))
            .envs(env.iter().copied())
            .output()
            .expect("run iotoll");
        if !out.status.success() {
            // What failed is stored with the run (`--quiet` prints only the end).
            let stored = d.last_run_id().map(|r| d.show(&r.to_string()).to_string());
            return Err(format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stderr),
                stored.unwrap_or_default()
            ));
        }
        Ok(d.last_run())
    }
}

impl Drop for LabSuite {
    fn drop(&mut self) {
        // Already down after a complete run: "is not up" is fine here.
        let _ = super::raw()
            .env("IOTOLL_LAB_DIR", self.tmp.dir.path())
            .args(["lab", "down", &self.name])
            .output();
    }
}
