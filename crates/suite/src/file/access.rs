//! A suite file's `[[spec]]` tables: access specifications with their
//! lines, each checked where it is written.

use super::*;

impl<'a> Ctx<'a> {
    /// The file's `[[spec]]` tables, each checked: a name, its lines
    /// (their shares adding up to 100) and its QD.
    pub(super) fn specs(&self, root: &Node<'a>) -> Checked<Vec<AccessSpec>> {
        let tables = match root.get_ref().as_table().and_then(|t| t.get("spec")) {
            None => return Ok(Vec::new()),
            Some(n) => match n.get_ref() {
                DeValue::Array(a) => a.iter().collect::<Vec<_>>(),
                _ => {
                    return Err(self.err(Some(n.span()), Some("spec"), "expected [[spec]] tables"))
                }
            },
        };
        let mut out: Vec<AccessSpec> = Vec::new();
        for t in tables {
            let header = t.span();
            if !t.get_ref().is_table() {
                return Err(self.err(Some(header), None, "a [[spec]] must be a table"));
            }
            let table: SpecTable = read(t).map_err(|e| {
                self.de_err(e, |_| {
                    "unknown key for a [[spec]]; known: name, qd, lines, and for a single line share, bs, read, random, burst_delay, burst_len, align".into()
                })
            })?;
            let node = t.get_ref().as_table().and_then(|t| t.get("lines"));
            // Each line is read as its turn comes, so that errors come in
            // the file's order.
            let items: Option<LineItems> = match node.map(|n| n.get_ref()) {
                Some(DeValue::Array(a)) if !a.is_empty() => Some(Box::new(a.iter().map(|item| {
                    let keys: LineKeys = read(item).map_err(|e| {
                        self.de_err(e, |_| {
                            "unknown key for a line; known: share, bs, read, random, burst_delay, burst_len, align".into()
                        })
                    })?;
                    Ok((item.span(), keys))
                }))),
                _ => None,
            };
            let spec = self.spec(table, header, items, &out)?;
            out.push(spec);
        }
        Ok(out)
    }

    /// One `[[spec]]` checked (`items`: its `lines = [...]`, when that is a
    /// list with lines in it), against the specs before it (`out`).
    pub(crate) fn spec(
        &self,
        mut table: SpecTable,
        header: Span,
        items: Option<LineItems>,
        out: &[AccessSpec],
    ) -> Checked<AccessSpec> {
        let name = self.check(table.name.as_ref(), "name", |v| {
            let n = as_str(v)?;
            if n.is_empty() || n.contains(char::is_control) {
                return Err("a spec name must be non-empty, without control characters".into());
            }
            Ok(n.to_string())
        })?;
        let (Some(name), Some(name_v)) = (name, table.name.as_ref()) else {
            return Err(self.err(Some(header), None, "this [[spec]] has no name"));
        };
        if out.iter().any(|s| s.name == name) {
            return Err(self.at(name_v, "name", format!("a second [[spec]] named '{name}'")));
        }
        let qd = self.check(table.qd.as_ref(), "qd", as_u32)?;
        let what = format!("spec '{name}'");
        let one = table.one();
        let lines = match (&table.lines, one.any()) {
            (Some(_), Some((k, v))) => {
                let msg =
                    format!("{what} has lines = [...]; give {k} in each line, not beside them");
                return Err(self.at(v, k, msg));
            }
            (Some(l), None) => {
                let Some(items) = items else {
                    let msg = "expected a list of lines: [{ share = 60, bs = \"4k\", read = 70, random = 100 }, ...]";
                    return Err(self.at(l, "lines", msg));
                };
                let items: Vec<Checked<(Span, LineKeys)>> = items.collect();
                let many = items.len() > 1;
                let mut lines = Vec::with_capacity(items.len());
                for item in items {
                    let (at, keys) = item?;
                    lines.push(self.line(&keys, many, at, &what)?);
                }
                lines
            }
            (None, _) => vec![self.line(&one, false, header.clone(), &what)?],
        };
        if let Err(e) = specs::check_lines(&lines, &what) {
            let at = table.lines.as_ref().map_or(header.clone(), Raw::span);
            return Err(self.err(Some(at), Some("lines"), flags_as_keys(&e.to_string())));
        }
        Ok(AccessSpec {
            name,
            lines,
            qd: qd.unwrap_or(DiskRequest::default().qd),
            source: None,
        })
    }

    /// One line of a `[[spec]]`; `many`: the spec has several, each of
    /// which must give its share.
    pub(super) fn line(
        &self,
        k: &LineKeys,
        many: bool,
        at: Span,
        what: &str,
    ) -> Checked<AccessLine> {
        let mut l = AccessLine::default();
        match self.check(k.share.as_ref(), "share", |v| match as_u32(v)? {
            p if (1..=100).contains(&p) => Ok(p),
            p => Err(format!("share {p} is outside 1-100")),
        })? {
            Some(p) => l.share_pct = p,
            None if many => {
                let msg = format!("a line of {what} has no share (its % of the I/Os)");
                return Err(self.err(Some(at), Some("share"), msg));
            }
            None => {}
        }
        l.bs = self.check(k.bs.as_ref(), "bs", as_size)?.ok_or_else(|| {
            let msg = format!("a line of {what} has no bs (transfer size)");
            self.err(Some(at.clone()), Some("bs"), msg)
        })?;
        // What a line leaves out keeps `AccessLine`'s default.
        l.read_pct = (self.check(k.read.as_ref(), "read", pct)?).unwrap_or(l.read_pct);
        l.random_pct = (self.check(k.random.as_ref(), "random", pct)?).unwrap_or(l.random_pct);
        let delay = self.check(k.burst_delay.as_ref(), "burst_delay", as_duration)?;
        l.burst_delay = delay.unwrap_or(l.burst_delay);
        let len = self.check(k.burst_len.as_ref(), "burst_len", as_u32)?;
        l.burst_len = len.unwrap_or(l.burst_len);
        l.align = self.check(k.align.as_ref(), "align", as_size)?;
        // The engine's checks of one line, told on the line's key.
        let probe = DiskRequest {
            lines: vec![AccessLine {
                share_pct: 100,
                ..l.clone()
            }],
            ..DiskRequest::default()
        };
        if let Err(e) = probe.validate() {
            let msg = flags_as_keys(&e.to_string());
            let keys = [
                ("bs", &k.bs),
                ("align", &k.align),
                ("burst_len", &k.burst_len),
            ];
            let (key, raw) = match keys.into_iter().find(|(n, _)| msg.starts_with(n)) {
                Some((n, raw)) => (Some(n), raw.as_ref()),
                None => (None, None),
            };
            let msg = format!("{what}: {msg}");
            return Err(self.err(Some(raw.map_or(at, Raw::span)), key, msg));
        }
        Ok(l)
    }
}
