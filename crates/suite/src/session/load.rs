//! What a run is made of, found before anything is created: the suite
//! (a built-in, a suite file or an Iometer .icf) and the hosts its tests
//! are placed on.

use super::{lab, SessionError};
use crate::file::{parse, Suite};
use crate::hosts::{parse_hosts_file, resolve_hosts, HostEntry};
use crate::{builtin, icf, Placement};
use std::path::{Path, PathBuf};

fn read(what: &str, p: &Path) -> Result<String, SessionError> {
    std::fs::read_to_string(p).map_err(|source| SessionError::Read {
        what: what.to_string(),
        source,
    })
}

/// A suite, and for an .icf the lines saying which of its targets became
/// which `--target` and what it leaves out. `run`: the targets must all
/// be given (for `show` they may be left out, and are listed). A target
/// given twice (the same file or device by any path) is refused first.
pub fn load(
    which: &str,
    targets: &[PathBuf],
    run: bool,
) -> Result<(Suite, Vec<String>), SessionError> {
    let usage = SessionError::Usage;
    if let Some(t) = iotoll_disk::target::given_twice(targets) {
        return Err(usage(format!("--target {} is given twice", t.display())));
    }
    let icf = which.to_ascii_lowercase().ends_with(".icf");
    let (path, builtin) = (Path::new(which), builtin::find(which));
    let text = match builtin {
        Some(t) => t.to_string(),
        None if icf && !path.is_file() => return Err(usage(format!("{which}: no such file"))),
        None if !icf && !path.exists() => {
            let names: Vec<&str> = builtin::BUILTIN.iter().map(|(n, _)| *n).collect();
            let names = names.join(", ");
            let msg = format!("'{which}' is neither a built-in suite ({names}) nor a file");
            return Err(usage(msg));
        }
        None => read(which, path)?,
    };
    // A file is an .icf by its name or, whatever its name, by its text.
    if builtin.is_none() && (icf || icf::looks_like_icf(&text)) {
        return load_icf(which, &text, targets, run);
    }
    let file = match builtin {
        Some(_) => format!("built-in suite '{which}'"),
        None => which.to_string(),
    };
    Ok((
        parse(&text, &file).map_err(|e| usage(e.to_string()))?,
        Vec::new(),
    ))
}

/// An .icf's suite, its targets mapped onto `targets` in order.
fn load_icf(
    which: &str,
    text: &str,
    targets: &[PathBuf],
    run: bool,
) -> Result<(Suite, Vec<String>), SessionError> {
    let usage = SessionError::Usage;
    let (suite, imp) = icf::suite(text, which).map_err(|e| usage(e.to_string()))?;
    let names: Vec<String> = imp.targets.iter().map(|t| format!("'{t}'")).collect();
    let names = names.join(", ");
    let (want, given) = (imp.targets.len(), targets.len());
    let short = given < want && (given > 0 || run);
    if short || want > 0 && given > want {
        let give = match short {
            true => "give one --target for each, in this order",
            false => "give one for each",
        };
        return Err(usage(format!(
            "{which} names {want} Iometer target(s) ({names}), {given} --target given: {give}"
        )));
    }
    let mut lines: Vec<String> = (imp.targets.iter().enumerate())
        .map(|(i, t)| match targets.get(i) {
            Some(p) => format!("Iometer target '{t}' -> {}", p.display()),
            None => format!("Iometer target '{t}' -> (give --target)"),
        })
        .collect();
    lines.extend(imp.notes.iter().map(|n| format!("{which}: {n}")));
    Ok((suite, lines))
}

/// Names as errors list them: all of a few, or the first and the last.
fn some_names(names: &[&str]) -> String {
    match names {
        [first, _, _, .., last] => format!("{first}, ..., {last}"),
        all => all.join(", "),
    }
}

/// The hosts the suite's tests are placed on, resolved (docs/suites.md,
/// "Hosts and placement") from the suite's `[hosts]`, the hosts file
/// and the lab (`lab`: its name and `--lab-set`s; looked up, not brought
/// up); usage errors name the file and line, or the test and host.
pub fn placed_hosts(
    suite: &Suite,
    hosts_file: Option<&Path>,
    lab: Option<(&str, &[String])>,
) -> Result<Vec<HostEntry>, SessionError> {
    let usage = SessionError::Usage;
    let file_hosts = match hosts_file {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| usage(format!("--hosts {}: {e}", p.display())))?;
            parse_hosts_file(&text, &p.display().to_string()).map_err(|e| usage(e.to_string()))?
        }
        None => Vec::new(),
    };
    if suite.jobs.iter().all(|j| j.placement.is_local()) {
        return Ok(Vec::new());
    }
    if hosts_file.is_none() && lab.is_none() {
        undefined_hosts(suite)?;
    }
    let lab_hosts = lab.map(|(l, sets)| lab::host_names(l, sets)).transpose()?;
    resolve_hosts(suite, &file_hosts, lab_hosts.as_deref()).map_err(usage)
}

/// Hosts the suite's own `[hosts]` leaves undefined need a file or a lab:
/// the first test that names one, and a built-in lab that has them all.
fn undefined_hosts(suite: &Suite) -> Result<(), SessionError> {
    let defined = |h: &str| suite.hosts.iter().any(|d| d.name == h);
    let undefined = (suite.jobs.iter()).find(|j| j.placement.hosts().iter().any(|h| !defined(h)));
    let Some(j) = undefined else {
        return Ok(());
    };
    let test = j.name.split('/').next().unwrap_or(&j.name);
    // Clients first, then servers: "c1, ..., server".
    let mut hosts = j.placement.hosts();
    if let Placement::Net { pairs } = &j.placement {
        hosts.sort_by_key(|h| pairs.iter().any(|(_, s)| s == h));
    }
    let hint = match lab::builtins_with(&hosts).first() {
        Some(l) => format!(" (e.g. --lab {l})"),
        None => String::new(),
    };
    Err(SessionError::Usage(format!(
        "test '{test}' runs on hosts ({}): give --hosts FILE or --lab NAME{hint}",
        some_names(&hosts)
    )))
}
