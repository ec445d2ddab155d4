//! The lab a suite runs in (`suite run --lab`): found up, or brought up
//! for the run and taken down after it; the endpoint's and the tests'
//! hosts in it.

use super::SessionError;
use crate::runner::LabRun;
use iotoll_lab::{LabDef, LabState};

/// A lab that is up for a run: taken down when dropped (at the end of
/// the run, however it ends) if the run brought it up.
pub struct SuiteLab {
    pub run: LabRun,
    brought_up: bool,
    say: fn(&str),
}

impl Drop for SuiteLab {
    fn drop(&mut self) {
        if self.brought_up {
            let name = &self.run.lab.name;
            (self.say)(&match iotoll_lab::down(name) {
                Ok(_) => format!("lab {name} taken down"),
                Err(e) => format!(
                    "lab {name} could not be taken down: {e} (try `iotoll lab down {name}`)"
                ),
            });
        }
    }
}

impl SuiteLab {
    /// What the run's disclosure records: the lab, its settings, and where
    /// the endpoint and the tests ran.
    pub fn disclosure(&self) -> serde_json::Value {
        let mut d = self.run.lab.disclosure();
        d["server"] = self.run.server.clone().into();
        d["client"] = self.run.client.clone().into();
        d
    }

    /// Finds or brings up the lab `lab` (a name that is up, a built-in or
    /// a file, with `sets`) and picks the endpoint's and the tests' hosts,
    /// all checked before anything is created. `say` tells of a lab
    /// brought up or taken down.
    pub fn bring_up(
        lab: &str,
        sets: &[String],
        server: Option<&str>,
        client: Option<&str>,
        say: fn(&str),
    ) -> Result<SuiteLab, SessionError> {
        let found = Found::find(lab, sets)?;
        let (name, hosts) = found.names();
        if let Found::Up(st) = &found {
            if !sets.is_empty() {
                return Err(SessionError::Usage(format!(
                    "lab {name} is already up (with its own settings: {}); take it down (`iotoll lab down {name}`) to run with --lab-set, or drop --lab-set",
                    if st.sets.is_empty() { "none".to_string() } else { st.sets.join(" ") },
                )));
            }
        }
        let (server, client) = pick_hosts(name, &hosts, server, client)?;
        let (lab, brought_up) = match found {
            Found::Up(st) => (st, false),
            Found::Defined(def) => {
                say(&format!("bringing lab {} up for this run", def.name));
                (iotoll_lab::up(&def, false)?, true)
            }
        };
        let run = LabRun {
            lab,
            server,
            client,
        };
        // Made before the check: a lab brought up comes down on its drop.
        let guard = SuiteLab {
            run,
            brought_up,
            say,
        };
        let st = &guard.run.lab;
        if !st.complete {
            return Err(SessionError::Failed(format!(
                "lab {} is only half up (its `lab up` did not finish); `iotoll lab down {}` and try again",
                st.name, st.name
            )));
        }
        Ok(guard)
    }
}

/// The first of `names` that is among `hosts`.
fn first_of<'a>(hosts: &[String], names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|n| hosts.iter().any(|h| h == n))
}

/// The endpoint's host and the tests' host among `hosts` of lab `lab`:
/// as named (checked), or by the built-ins' conventions.
fn pick_hosts(
    lab: &str,
    hosts: &[String],
    server: Option<&str>,
    client: Option<&str>,
) -> Result<(String, String), SessionError> {
    let all = hosts.join(", ");
    let usage = SessionError::Usage;
    let named = |which: &str, h: Option<&str>| match h {
        Some(h) if !hosts.iter().any(|x| x == h) => Err(usage(format!(
            "--{which} {h}: lab {lab} has no such host (its hosts: {all})"
        ))),
        h => Ok(h.map(str::to_string)),
    };
    let server = named("server", server)?
        .or_else(|| first_of(hosts, &["server", "target", "b"]).map(str::to_string))
        .ok_or_else(|| {
            usage(format!(
                "name the endpoint's host with --server (lab {lab}'s hosts: {all})"
            ))
        })?;
    let client = named("client", client)?
        .or_else(|| {
            first_of(hosts, &["c1", "initiator", "a"])
                .filter(|c| *c != server)
                .map(str::to_string)
                .or_else(|| hosts.iter().find(|h| **h != server).cloned())
        })
        .ok_or_else(|| usage(format!("lab {lab} has no host besides {server}")))?;
    if server == client {
        return Err(usage(format!(
            "--server and --client are both {server}: the endpoint and the tests need two hosts"
        )));
    }
    Ok((server, client))
}

/// A lab as found: up already, or only defined (to bring up).
enum Found {
    Up(LabState),
    Defined(LabDef),
}

impl Found {
    /// The lab `lab` (a name that is up, a built-in or a file, with `sets`),
    /// nothing created.
    fn find(lab: &str, sets: &[String]) -> Result<Found, SessionError> {
        Ok(match iotoll_lab::status(lab)? {
            Some(st) => Found::Up(st),
            None => {
                let def = iotoll_lab::load(lab, sets)?;
                match iotoll_lab::status(&def.name)? {
                    Some(st) => Found::Up(st),
                    None => Found::Defined(def),
                }
            }
        })
    }

    /// Its name and its hosts' names.
    fn names(&self) -> (&str, Vec<String>) {
        match self {
            Found::Up(st) => (&st.name, st.hosts.iter().map(|h| h.name.clone()).collect()),
            Found::Defined(d) => (&d.name, d.hosts.iter().map(|h| h.name.clone()).collect()),
        }
    }
}

/// The host names of lab `lab` (up, or as it would be brought up), for a
/// multi-host suite's hosts to be checked before anything is created.
pub fn host_names(lab: &str, sets: &[String]) -> Result<Vec<String>, SessionError> {
    Ok(Found::find(lab, sets)?.names().1)
}

/// The built-in labs that have every one of `hosts`, for hints.
pub fn builtins_with(hosts: &[&str]) -> Vec<&'static str> {
    (iotoll_lab::builtin_names().into_iter())
        .filter(|n| {
            iotoll_lab::load(n, &[])
                .is_ok_and(|d| (hosts.iter()).all(|h| d.hosts.iter().any(|x| x.name == *h)))
        })
        .collect()
}
