//! Reading an .icf into the model, item by item with its line.

use super::*;

/// Whether `text` looks like an .icf: its first line that is not blank
/// says `Version`.
pub fn looks_like_icf(text: &str) -> bool {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    first.is_some_and(|l| starts_with_ci(l, "Version"))
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn is_ci(s: &str, what: &str) -> bool {
    s.eq_ignore_ascii_case(what)
}

const SECTIONS: [&str; 4] = [
    "'TEST SETUP",
    "'RESULTS DISPLAY",
    "'ACCESS SPECIFICATIONS",
    "'MANAGER LIST",
];

/// A stop: a problem after which the rest of the section cannot be read.
type Stop = (usize, String);

struct Reader<'a> {
    lines: Vec<&'a str>,
    /// Index of the next line.
    i: usize,
    problems: Vec<(Option<usize>, String)>,
}

impl<'a> Reader<'a> {
    fn line_no(&self) -> usize {
        self.i + 1
    }

    fn skip_blank(&mut self) {
        while self.i < self.lines.len() && self.lines[self.i].is_empty() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<&'a str> {
        self.skip_blank();
        self.lines.get(self.i).copied()
    }

    fn next_line(&mut self) -> Option<(usize, &'a str)> {
        let l = self.lines.get(self.i).copied()?;
        self.i += 1;
        Some((self.i, l))
    }

    /// A key (a comment line) and its value: the first line after the
    /// key's comment lines. `'End...` and `'Version` keys have no value.
    fn pair(&mut self, within: &str) -> Result<(usize, &'a str, usize, &'a str), Stop> {
        self.skip_blank();
        let at = self.line_no();
        let Some((_, key)) = self.next_line() else {
            return Err((at, format!("the file ends inside {within}")));
        };
        if !key.starts_with('\'') {
            return Err((
                at,
                format!("expected a comment line (') in {within}, found '{key}'"),
            ));
        }
        if starts_with_ci(key, "'End") || starts_with_ci(key, "'Version") {
            return Ok((at, key, at, ""));
        }
        while let Some(l) = self.lines.get(self.i) {
            if !l.starts_with('\'') {
                break;
            }
            if starts_with_ci(l, "'End") || starts_with_ci(l, "'Version") {
                // A key without its value (an empty item).
                return Ok((at, key, self.line_no(), ""));
            }
            self.i += 1;
        }
        match self.next_line() {
            Some((n, v)) => Ok((at, key, n, v)),
            None => Err((at, format!("'{}' has no value line", &key[1..]))),
        }
    }

    fn unknown(&mut self, at: usize, what: &str, key: &str) {
        self.problems
            .push((Some(at), format!("unknown key '{}' in {what}", &key[1..])));
    }

    /// A key the reader of `within` does not take: a misplaced end
    /// (`'End...`, `'Version`) stops it, said as `expected`; any other is
    /// listed as unknown and reading goes on.
    fn other(&mut self, at: usize, key: &str, expected: &str, within: &str) -> Result<(), Stop> {
        if starts_with_ci(key, "'End") || starts_with_ci(key, "'Version") {
            return Err((at, format!("{expected}, found {key}")));
        }
        self.unknown(at, within, key);
        Ok(())
    }
}

fn num<T: std::str::FromStr>(s: &str, at: usize, what: &str) -> Result<T, Stop> {
    s.trim().parse().map_err(|_| {
        (
            at,
            format!("{what}: expected a whole number, got '{}'", s.trim()),
        )
    })
}

/// Whole numbers and words of a value line, split at commas and blanks.
fn fields(v: &str) -> Vec<&str> {
    v.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|f| !f.is_empty())
        .collect()
}

fn enabled(s: &str, at: usize, what: &str) -> Result<bool, Stop> {
    match s.to_ascii_uppercase().as_str() {
        "ENABLED" => Ok(true),
        "DISABLED" => Ok(false),
        _ => Err((
            at,
            format!("{what}: expected ENABLED or DISABLED, got '{s}'"),
        )),
    }
}

/// Reads an .icf. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Icf, IcfError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut r = Reader {
        lines: text.lines().map(str::trim).collect(),
        i: 0,
        problems: Vec::new(),
    };
    let mut icf = Icf::default();
    // Every problem listed, with the one that stopped the reading if any.
    let fail = |r: Reader, stop: Option<Stop>| {
        let mut problems = r.problems;
        problems.extend(stop.map(|(at, msg)| (Some(at), msg)));
        problems.sort_by_key(|(l, _)| *l);
        IcfError {
            file: file.into(),
            problems,
        }
    };
    r.skip_blank();
    match r.next_line() {
        Some((_, l)) if starts_with_ci(l, "Version") => {
            icf.version = l["Version".len()..].trim().to_string();
        }
        _ => {
            let at = r.i.max(1);
            return Err(IcfError::one(
                file,
                Some(at),
                "not an Iometer configuration file: the first line should be 'Version 1.1.0' (or another version)",
            ));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    while let Some(l) = r.peek() {
        let at = r.line_no();
        if starts_with_ci(l, "Version") {
            // The closing version line.
            r.i += 1;
            continue;
        }
        let Some(section) = SECTIONS.iter().find(|s| starts_with_ci(l, s)) else {
            if let Some(name) = l.strip_prefix('\'') {
                let name = name.trim_end_matches(['=', ' ']);
                r.problems.push((
                    Some(at),
                    format!(
                        "unknown section '{name}'; known: TEST SETUP, RESULTS DISPLAY, ACCESS SPECIFICATIONS, MANAGER LIST"
                    ),
                ));
            } else {
                r.problems.push((
                    Some(at),
                    format!("unexpected line outside any section: '{l}'"),
                ));
            }
            // Skip to the next section or the closing version line.
            r.i += 1;
            while let Some(l) = r.peek() {
                if starts_with_ci(l, "Version") || SECTIONS.iter().any(|s| starts_with_ci(l, s)) {
                    break;
                }
                r.i += 1;
            }
            continue;
        };
        if seen.contains(section) {
            let msg = format!("a second {} section", &section[1..]);
            return Err(fail(r, Some((at, msg))));
        }
        seen.push(section);
        r.i += 1;
        let read = match *section {
            "'TEST SETUP" => test_setup(&mut r, at).map(|s| icf.setup = Some(s)),
            "'RESULTS DISPLAY" => display(&mut r).map(|d| icf.display = d),
            "'ACCESS SPECIFICATIONS" => access_specs(&mut r).map(|s| icf.specs = s),
            _ => managers(&mut r).map(|m| icf.managers = Some(m)),
        };
        if let Err(stop) = read {
            return Err(fail(r, Some(stop)));
        }
    }
    if !r.problems.is_empty() {
        return Err(fail(r, None));
    }
    Ok(icf)
}

fn cycle(v: &str, at: usize, what: &str, queue: bool) -> Result<(Vec<u32>, bool), Stop> {
    let f = fields(v);
    let n = if queue { 3 } else { 2 };
    let usage = || {
        let cols = if queue {
            "start, end, step"
        } else {
            "start, step"
        };
        (
            at,
            format!("{what}: expected {cols} and LINEAR or EXPONENTIAL, got '{v}'"),
        )
    };
    if f.len() != n + 1 {
        return Err(usage());
    }
    let nums: Vec<u32> = (f[..n].iter())
        .map(|x| x.parse().map_err(|_| usage()))
        .collect::<Result<_, _>>()?;
    let exponential = match f[n].to_ascii_uppercase().as_str() {
        "LINEAR" | "0" => false,
        "EXPONENTIAL" | "1" => true,
        _ => return Err(usage()),
    };
    Ok((nums, exponential))
}

fn spawn(v: &str, at: usize, what: &str) -> Result<Spawn, Stop> {
    if is_ci(v.trim(), "NUMBER_OF_CPUS") {
        Ok(Spawn::Cpus)
    } else {
        num(v, at, what).map(Spawn::N)
    }
}

fn test_setup(r: &mut Reader, section_at: usize) -> Result<Setup, Stop> {
    let mut s = Setup {
        at: section_at,
        ..Setup::default()
    };
    loop {
        let (at, key, vat, v) = r.pair("TEST SETUP")?;
        let k = &key[1..];
        let lower = k.to_ascii_lowercase();
        match lower.as_str() {
            "end test setup" => return Ok(s),
            "test description" => s.description = v.to_string(),
            "run time" => {
                let f = fields(v);
                let bad = || {
                    (
                        vat,
                        format!("Run Time: expected hours, minutes and seconds, got '{v}'"),
                    )
                };
                if f.len() != 3 {
                    return Err(bad());
                }
                let n: Vec<u32> =
                    (f.iter().map(|x| x.parse().map_err(|_| bad()))).collect::<Result<_, _>>()?;
                s.run_time = (n[0], n[1], n[2]);
                s.run_time_at = at;
            }
            l if l.starts_with("ramp up time") => s.ramp_s = num(v, vat, "Ramp Up Time")?,
            "default disk workers to spawn" => s.disk_workers = spawn(v, vat, k)?,
            "default network workers to spawn" => s.net_workers = spawn(v, vat, k)?,
            // Files before 1999: 0 meant one per CPU.
            "default workers to spawn" => {
                s.disk_workers = match num(v, vat, k)? {
                    0 => Spawn::Cpus,
                    n => Spawn::N(n),
                }
            }
            "record results" => {
                let known = ["ALL", "NO_TARGETS", "NO_WORKERS", "NO_MANAGERS", "NONE"];
                let up = v.trim().to_ascii_uppercase();
                s.record = match up.parse::<usize>() {
                    Ok(i) if i < known.len() => known[i].to_string(),
                    _ if known.contains(&up.as_str()) => up,
                    _ => {
                        let msg = format!(
                            "Record Results: expected one of {}, got '{v}'",
                            known.join(", ")
                        );
                        return Err((vat, msg));
                    }
                };
            }
            "worker cycling" | "disk cycling" => {
                let (n, exponential) = cycle(v, vat, k, false)?;
                let c = Cycle {
                    start: n[0],
                    step: n[1],
                    exponential,
                };
                if lower == "worker cycling" {
                    s.worker_cycling = c
                } else {
                    s.disk_cycling = c
                }
            }
            "queue depth cycling" => {
                let (n, exponential) = cycle(v, vat, k, true)?;
                s.queue_cycling = QueueCycle {
                    start: n[0],
                    end: n[1],
                    step: n[2],
                    exponential,
                };
            }
            "test type" => {
                s.test_type = TestType::parse(v.trim()).ok_or_else(|| {
                    let known: Vec<&str> = TEST_TYPES.iter().map(|(_, n)| *n).collect();
                    (
                        vat,
                        format!("Test Type: expected one of {}, got '{v}'", known.join(", ")),
                    )
                })?;
                s.test_type_at = at;
            }
            _ => r.other(at, key, "expected 'END test setup", "TEST SETUP")?,
        }
    }
}

fn display(r: &mut Reader) -> Result<Vec<(String, String)>, Stop> {
    let mut out = Vec::new();
    loop {
        let (at, key, _, v) = r.pair("RESULTS DISPLAY")?;
        let k = key[1..].to_ascii_lowercase();
        if k == "end results display" {
            return Ok(out);
        }
        let known = k == "record last update results,update frequency,update type"
            || k == "update frequency,update type"
            || k.starts_with("bar chart ");
        if known {
            out.push((key.to_string(), v.to_string()));
        } else {
            r.other(at, key, "expected 'END results display", "RESULTS DISPLAY")?;
        }
    }
}

fn access_specs(r: &mut Reader) -> Result<Vec<Spec>, Stop> {
    let mut specs: Vec<Spec> = Vec::new();
    loop {
        let (at, key, vat, v) = r.pair("ACCESS SPECIFICATIONS")?;
        let k = key[1..].to_ascii_lowercase();
        if k == "end access specifications" {
            return Ok(specs);
        }
        if k != "access specification name,default assignment" {
            let expected = "expected 'END access specifications";
            r.other(at, key, expected, "ACCESS SPECIFICATIONS")?;
            continue;
        }
        let (name, assignment) = v.rsplit_once(',').unwrap_or((v, "NONE"));
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err((vat, "an access specification without a name".into()));
        }
        let assignment = assignment.trim().to_ascii_uppercase();
        if !["NONE", "ALL", "DISK", "NET", "0", "1", "2", "3"].contains(&assignment.as_str()) {
            let msg = format!("access specification '{name}': default assignment '{assignment}' is not NONE, ALL, DISK or NET");
            return Err((vat, msg));
        }
        // The caption line of the columns.
        r.skip_blank();
        match r.next_line() {
            Some((_, l)) if l.starts_with('\'') => {}
            _ => {
                let msg = format!("access specification '{name}': expected the line 'size,% of size,% reads,% random,delay,burst,align,reply");
                return Err((r.i, msg));
            }
        }
        let mut lines = Vec::new();
        while let Some(l) = r.peek() {
            if l.starts_with('\'') {
                break;
            }
            let lat = r.line_no();
            r.i += 1;
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() != 8 {
                let msg = format!("access specification '{name}': a line has 8 fields (size,% of size,% reads,% random,delay,burst,align,reply), this one {}: '{l}'", f.len());
                return Err((lat, msg));
            }
            let n = |i: usize, what: &str| {
                num::<u64>(f[i], lat, &format!("access specification '{name}': {what}"))
            };
            let pct = |i: usize, what: &str| -> Result<u32, Stop> {
                match n(i, what)? {
                    p if p <= 100 => Ok(p as u32),
                    p => Err((
                        lat,
                        format!("access specification '{name}': {what} {p} is outside 0-100"),
                    )),
                }
            };
            lines.push(Line {
                size: n(0, "size")?,
                share: pct(1, "% of size")?,
                reads: pct(2, "% reads")?,
                random: pct(3, "% random")?,
                delay_ms: n(4, "delay")?,
                burst: num(f[5], lat, &format!("access specification '{name}': burst"))?,
                align: n(6, "align")?,
                reply: n(7, "reply")?,
                at: lat,
            });
        }
        let total: u64 = lines.iter().map(|l| l.share as u64).sum();
        if lines.is_empty() {
            r.problems.push((
                Some(vat),
                format!("access specification '{name}' has no lines"),
            ));
        } else if total != 100 {
            let shares: Vec<String> = lines.iter().map(|l| l.share.to_string()).collect();
            r.problems.push((
                Some(vat),
                format!(
                    "access specification '{name}': the lines' shares (% of size) add up to {total} % ({}); they must add up to 100 %",
                    shares.join(" + ")
                ),
            ));
        }
        if specs.iter().any(|s| s.name == name) {
            r.problems.push((
                Some(vat),
                format!("a second access specification named '{name}'"),
            ));
        }
        specs.push(Spec {
            name,
            assignment,
            lines,
            at: vat,
        });
    }
}

fn managers(r: &mut Reader) -> Result<Vec<Manager>, Stop> {
    let mut out = Vec::new();
    loop {
        let (at, key, vat, v) = r.pair("MANAGER LIST")?;
        let k = key[1..].to_ascii_lowercase();
        if k == "end manager list" {
            return Ok(out);
        }
        if k != "manager id, manager name" {
            r.other(at, key, "expected 'END manager list", "MANAGER LIST")?;
            continue;
        }
        let (id, name) = v.split_once(',').unwrap_or((v, ""));
        let id = num(id, vat, "manager ID")?;
        let (aat, akey, _, address) = r.pair("a manager")?;
        if !is_ci(akey, "'Manager network address") {
            return Err((aat, format!("expected 'Manager network address after the manager's ID and name, found {akey}")));
        }
        let mut m = Manager {
            id,
            name: name.trim().to_string(),
            address: address.to_string(),
            workers: Vec::new(),
            at: vat,
        };
        loop {
            let (at, key, vat, v) = r.pair("a manager")?;
            let k = key[1..].to_ascii_lowercase();
            if k == "end manager" {
                break;
            }
            if k != "worker" {
                r.other(at, key, "expected 'End manager", "a manager")?;
                continue;
            }
            m.workers.push(worker(r, v, vat)?);
        }
        out.push(m);
    }
}

/// The `'Worker type` or `'Target type` line after a worker's or a
/// target's name (`role`: Worker or Target), read within `what`; `ctx`
/// begins the message of a wrong key.
fn kind_line(
    r: &mut Reader,
    what: &str,
    ctx: &str,
    role: &str,
    name: &str,
) -> Result<WorkerKind, Stop> {
    let (at, key, vat, v) = r.pair(what)?;
    let lower = role.to_ascii_lowercase();
    if !is_ci(key, &format!("'{role} type")) {
        let msg = format!("{ctx}expected '{role} type after the {lower}'s name, found {key}");
        return Err((at, msg));
    }
    WorkerKind::parse(v).ok_or_else(|| {
        let msg = format!("{lower} '{name}': type '{v}' is not DISK, NETWORK,TCP or NETWORK,VI");
        (vat, msg)
    })
}

fn worker(r: &mut Reader, name: &str, at: usize) -> Result<Worker, Stop> {
    let kind = kind_line(r, "a worker", "", "Worker", name)?;
    let mut w = Worker::new(name, kind);
    w.data_pattern = None;
    w.at = at;
    let what = format!("worker '{name}'");
    loop {
        r.skip_blank();
        let Some((cat, c)) = r.next_line() else {
            return Err((r.i, format!("the file ends inside {what}")));
        };
        let lower = c.to_ascii_lowercase();
        match lower.as_str() {
            "'end worker" => return Ok(w),
            "'default target settings for worker" => defaults(r, &mut w, &what)?,
            "'assigned access specs" => {
                let mut specs = Vec::new();
                loop {
                    r.skip_blank();
                    match r.next_line() {
                        Some((_, l)) if is_ci(l, "'End assigned access specs") => break,
                        Some((lat, l)) if l.starts_with('\'') => {
                            return Err((lat, format!("{what}: expected an access specification's name or 'End assigned access specs, found {l}")));
                        }
                        Some((_, l)) => specs.push(l.to_string()),
                        None => {
                            return Err((cat, format!("{what}: no 'End assigned access specs")))
                        }
                    }
                }
                w.specs = Some(specs);
            }
            "'target assignments" => w.targets = Some(targets(r, &what)?),
            _ if c.starts_with('\'')
                && !lower.starts_with("'end")
                && !lower.starts_with("'version") =>
            {
                r.unknown(cat, &what, c);
                // Its value, if it has one.
                if r.lines.get(r.i).is_some_and(|l| !l.starts_with('\'')) {
                    r.i += 1;
                }
            }
            _ => return Err((cat, format!("{what}: expected 'End worker, found '{c}'"))),
        }
    }
}

fn defaults(r: &mut Reader, w: &mut Worker, what: &str) -> Result<(), Stop> {
    loop {
        let (at, key, vat, v) = r.pair(what)?;
        let k = key[1..].to_ascii_lowercase();
        let f: Vec<&str> = v.split(',').map(str::trim).collect();
        let field = |i: usize, name: &str| -> Result<&str, Stop> {
            f.get(i)
                .copied()
                .ok_or_else(|| (vat, format!("{what}: no {name} in '{v}'")))
        };
        match k.as_str() {
            "end default target settings for worker" => return Ok(()),
            "number of outstanding ios,test connection rate,transactions per connection"
            | "number of outstanding ios,test connection rate,transactions per connection,use fixed seed,fixed seed value" => {
                w.qd = num(field(0, "number of outstanding I/Os")?, vat, "number of outstanding I/Os")?;
                w.test_connection_rate = enabled(field(1, "test connection rate")?, vat, "test connection rate")?;
                w.trans_per_conn = num(field(2, "transactions per connection")?, vat, "transactions per connection")?;
                if k.ends_with("fixed seed value") {
                    let on = enabled(field(3, "use fixed seed")?, vat, "use fixed seed")?;
                    let seed = num(field(4, "fixed seed value")?, vat, "fixed seed value")?;
                    w.fixed_seed = on.then_some(seed);
                }
            }
            "disk maximum size,starting sector" | "disk maximum size,starting sector,data pattern" => {
                w.disk_size = num(field(0, "disk maximum size")?, vat, "disk maximum size")?;
                w.start_sector = num(field(1, "starting sector")?, vat, "starting sector")?;
                if k.ends_with("data pattern") {
                    w.data_pattern = Some(num(field(2, "data pattern")?, vat, "data pattern")?);
                }
            }
            "local network interface" => w.local_interface = Some(v.to_string()),
            "vi outstanding ios" => w.vi_outstanding = Some(num(v, vat, "VI outstanding IOs")?),
            _ => r.other(
                at,
                key,
                &format!("{what}: expected 'End default target settings for worker"),
                &format!("the default target settings of {what}"),
            )?,
        }
    }
}

fn targets(r: &mut Reader, what: &str) -> Result<Vec<Target>, Stop> {
    let mut out = Vec::new();
    loop {
        let (at, key, vat, name) = r.pair(what)?;
        if is_ci(key, "'End target assignments") {
            return Ok(out);
        }
        if !is_ci(key, "'Target") {
            return Err((
                at,
                format!("{what}: expected 'Target or 'End target assignments, found {key}"),
            ));
        }
        let kind = kind_line(r, what, &format!("{what}: "), "Target", name)?;
        let mut t = Target {
            name: name.to_string(),
            kind,
            manager: None,
            at: vat,
        };
        loop {
            let (kat, k, mvat, v) = r.pair(what)?;
            if is_ci(k, "'End target") {
                break;
            }
            if is_ci(k, "'Target manager ID, manager name") {
                let (id, mname) = v.split_once(',').unwrap_or((v, ""));
                t.manager = Some((
                    num(id, mvat, "target manager ID")?,
                    mname.trim().to_string(),
                ));
            } else {
                let expected = format!("{what}: expected 'End target");
                r.other(kat, k, &expected, &format!("target '{name}' of {what}"))?;
            }
        }
        out.push(t);
    }
}
