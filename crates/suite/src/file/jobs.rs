//! A suite file's `[[test]]` tables: each checked, its settings taken from
//! the test or the suite, its list-valued parameters expanded into jobs.

use super::*;

impl<'a> Ctx<'a> {
    pub(super) fn tests<'d>(&self, root: &'d Node<'a>) -> Checked<Vec<&'d Node<'a>>> {
        let test = root.get_ref().as_table().and_then(|t| t.get("test"));
        match test.map(|t| (t.get_ref(), t.span())) {
            Some((DeValue::Array(a), _)) if !a.is_empty() => Ok(a.iter().collect()),
            Some((DeValue::Array(_), _)) | None => {
                Err(self.err(None, None, "the suite has no [[test]]"))
            }
            Some((_, at)) => Err(self.err(Some(at), Some("test"), "expected [[test]] tables")),
        }
    }

    /// Checks one [[test]]: its name, its kind, the keys that kind takes
    /// and the settings it ends up with.
    pub(super) fn test(
        &self,
        t: &Node,
        suite: &Common,
        seen: &mut HashSet<String>,
    ) -> Checked<Test> {
        let header = t.span();
        if !t.get_ref().is_table() {
            return Err(self.err(Some(header), None, "a [[test]] must be a table"));
        }
        let common: Common = read(t).map_err(|e| self.de_err(e, str::to_string))?;
        let params = |kind| {
            let params = match kind {
                Kind::Disk => DiskTest::params(t),
                Kind::NetStream => StreamTest::params(t),
                Kind::NetRr => RrTest::params(t),
                Kind::NetUdp => UdpTest::params(t),
                Kind::NetCrr => CrrTest::params(t),
                Kind::NetCc => CcTest::params(t),
            };
            params.map_err(|(e, known)| {
                self.de_err(e, |_| {
                    format!(
                        "unknown key for a {kind} test; known: {}, and to place it on hosts: {}",
                        known.join(", "),
                        crate::hosts::placement_keys(kind).join(", ")
                    )
                })
            })
        };
        let place = |kind, header: &Span| crate::hosts::placement(self, kind, t, header);
        let test = Given {
            header,
            common,
            params: &params,
            placement: &place,
        };
        self.checked_test(test, suite, seen)
    }

    /// Checks a test as given (`seen`: the names of the tests before it).
    pub(crate) fn checked_test(
        &self,
        t: Given,
        suite: &Common,
        seen: &mut HashSet<String>,
    ) -> Checked<Test> {
        let (header, common) = (t.header, t.common);
        let name = self.check(common.name.as_ref(), "name", |v| {
            let name = as_str(v)?;
            if name.is_empty() || name.contains(['/', ',']) || name.contains(char::is_control) {
                let msg = "a test name must be non-empty, without '/', ',' or control characters";
                return Err(msg.into());
            }
            Ok(name.to_string())
        })?;
        let Some((name, name_v)) = name.zip(common.name.as_ref()) else {
            return Err(self.err(Some(header), None, "this [[test]] has no name"));
        };
        if !seen.insert(name.clone()) {
            return Err(self.at(name_v, "name", format!("duplicate test name '{name}'")));
        }
        let kind = self.check(common.kind.as_ref(), "kind", |v| as_str(v)?.parse::<Kind>())?;
        let Some(kind) = kind else {
            let msg = format!("test '{name}' has no kind ({})", Kind::names());
            return Err(self.err(Some(header), None, msg));
        };
        let params = (t.params)(kind)?;
        let mut proto = self.proto(kind, &common, suite, &header)?;
        proto.placement = (t.placement)(kind, &header)?;
        if let Some((k, s)) = params.iter().find(|(_, s)| s.values().is_empty()) {
            return Err(self.at(&s.0, k, "empty sweep: give at least one value"));
        }
        let group = self.check(common.group.as_ref(), "group", |v| {
            Ok(as_str(v)?.to_string())
        })?;
        Ok(Test {
            group_at: common.group.as_ref().map_or(header.clone(), Raw::span),
            group: group.unwrap_or_else(|| name.clone()),
            name,
            name_at: name_v.span(),
            header,
            params,
            proto,
        })
    }

    /// The job each of the test's combinations starts from: the kind's
    /// defaults, and each setting from the test, else the suite.
    pub(super) fn proto(
        &self,
        kind: Kind,
        test: &Common,
        suite: &Common,
        header: &Span,
    ) -> Checked<Job> {
        let get = |key: fn(&Common) -> &Option<Raw>| key(test).as_ref().or(key(suite).as_ref());
        let reps = self.check(get(|d| &d.reps), "reps", |v| {
            let r = as_u32(v).ok().filter(|r| *r >= 1);
            r.ok_or_else(|| "expected a whole number of at least 1".into())
        })?;
        let rerun = self.check(get(|d| &d.rerun), "rerun", as_u32)?;
        let confidence = self.check(get(|d| &d.confidence), "confidence", |v| {
            iotoll_model::ci::Confidence::parse(as_str(v)?)
        })?;
        let at = || (test.confidence.as_ref().or(suite.confidence.as_ref())).map(Raw::span);
        if confidence.is_some() && reps.unwrap_or(1) < 3 {
            let msg = format!(
                "confidence needs reps of at least 3 (the most repetitions it may run, e.g. reps = 10), got {}",
                reps.unwrap_or(1)
            );
            return Err(self.err(at(), Some("confidence"), msg));
        }
        let repeatability_pct =
            self.check(get(|d| &d.repeatability_pct), "repeatability_pct", |v| {
                let x = as_number(v).filter(|x| *x >= 0.0);
                x.ok_or_else(|| "expected a number of 0 or more".into())
            })?;
        let interference_pct =
            self.check(get(|d| &d.interference_pct), "interference_pct", |v| {
                let x = as_number(v).filter(|x| (0.0..=100.0).contains(x));
                x.ok_or_else(|| "expected a number from 0 to 100 (% of the host's CPU)".into())
            })?;
        let headline = kind.headline();
        let rule = self.check(get(|d| &d.select), "select", |v| {
            Rule::parse(as_str(v)?, headline)
        })?;
        let rule = rule.unwrap_or_else(|| Rule::Median(headline.to_string()));
        let metric = match &rule {
            Rule::Median(m) => m.clone(),
            _ => headline.to_string(),
        };
        if !iotoll_model::metrics::produces(kind, &metric) {
            // A suite-wide rule this test cannot follow: the test is named.
            let at = test.select.as_ref().map_or(header.clone(), Raw::span);
            let msg = format!("a {kind} test has no metric '{metric}' to select by");
            return Err(self.err(Some(at), Some("select"), msg));
        }
        let ramp = self.check(get(|d| &d.ramp), "ramp", as_duration)?;
        let time = self.check(get(|d| &d.time), "time", |v| {
            let t = Some(as_duration(v)?).filter(|t| !t.is_zero());
            t.ok_or_else(|| "must be positive".into())
        })?;
        let net = |kind| {
            JobSpec::Net(ClientSpec {
                kind,
                ..ClientSpec::default()
            })
        };
        let mut spec = match kind {
            Kind::Disk => JobSpec::Disk(DiskRequest::default()),
            Kind::NetStream => net(TestKind::Stream),
            Kind::NetRr => net(TestKind::Rr),
            Kind::NetUdp => JobSpec::Net(ClientSpec::udp()),
            Kind::NetCrr => net(TestKind::Crr),
            Kind::NetCc => net(TestKind::Cc),
        };
        spec.set_durations(ramp, time);
        Ok(Job {
            name: String::new(),
            group: String::new(),
            kind,
            spec,
            params: serde_json::Value::Null,
            reps: reps.unwrap_or(1),
            rule,
            metric,
            repeatability_pct: repeatability_pct.unwrap_or(5.0),
            rerun: rerun.unwrap_or(0),
            confidence,
            interference_pct: interference_pct
                .unwrap_or(iotoll_model::result::DEFAULT_INTERFERENCE_PCT),
            placement: Placement::Local,
        })
    }

    /// Adds the test's jobs, one per combination of swept values. They are
    /// counted before any is built: a sweep of a million combinations is
    /// refused at once, not built.
    pub(super) fn expand(
        &self,
        test: &Test,
        jobs: &mut Vec<Job>,
        names: &mut HashSet<String>,
    ) -> Checked<()> {
        let lens = || test.params.iter().map(|(_, s)| s.values().len());
        let combos = lens()
            .try_fold(1usize, |acc, n| acc.checked_mul(n))
            .filter(|c| jobs.len().saturating_add(*c) <= MAX_TESTS)
            .ok_or_else(|| {
                let total = lens().fold(1f64, |acc, n| acc * n as f64);
                let swept: Vec<String> = (test.params.iter())
                    .filter(|(_, s)| s.values().len() > 1)
                    .map(|(k, s)| format!("{k}: {}", s.values().len()))
                    .collect();
                let msg = format!(
                    "test '{}' sweeps {} combinations ({}), and the suite would have more than {MAX_TESTS} tests: split it into several suites or sweep fewer values",
                    test.name,
                    units::format_number(total),
                    swept.join(" x ")
                );
                self.err(Some(test.header.clone()), None, msg)
            })?;
        jobs.reserve(combos);
        for n in 0..combos {
            let job = self.job(test, n)?;
            if !names.insert(job.name.clone()) {
                let msg = format!("duplicate test name '{}' after expansion", job.name);
                return Err(self.err(Some(test.name_at.clone()), Some("name"), msg));
            }
            jobs.push(job);
        }
        Ok(())
    }

    /// The test's `n`th combination: the mixed-radix digits of `n` pick one
    /// value per parameter.
    pub(super) fn job(&self, test: &Test, n: usize) -> Checked<Job> {
        let mut rest = n;
        let mut pick: Vec<(&str, &Value, &Sweep)> = Vec::with_capacity(test.params.len());
        for (k, s) in test.params.iter().rev() {
            let values = s.values();
            pick.push((k, &values[rest % values.len()], s));
            rest /= values.len();
        }
        pick.reverse();
        let mut job = test.proto.clone();
        (job.name, job.group) = (test.name.clone(), test.group.clone());
        let (mut params, mut sep) = (serde_json::Map::new(), '/');
        for (k, v, s) in &pick {
            (job.spec.apply(k, v, &self.file_specs))
                .map_err(|m| self.at(&s.0, k, flags_as_keys(&m)))?;
            params.insert(k.to_string(), value_json(v));
            let label = value_label(v);
            if s.values().len() > 1 {
                job.name += &format!("{sep}{k}={label}");
                sep = ',';
            }
            job.group = job.group.replace(&format!("{{{k}}}"), &label);
        }
        job.spec.validate().map_err(|m| self.invalid(test, &m))?;
        if let Some(open) = job.group.find('{') {
            let msg = format!("'{}' names no parameter of this test", &job.group[open..]);
            return Err(self.err(Some(test.group_at.clone()), Some("group"), msg));
        }
        // Stored with the results, so the test says it was repeated to a
        // confidence interval.
        if let Some(c) = &job.confidence {
            params.insert("confidence".into(), c.label().into());
        }
        // Stored with the results: where the test ran is one of its parameters.
        if let Some((k, v)) = job.placement.param() {
            params.insert(k.to_string(), v);
        }
        job.params = serde_json::Value::Object(params);
        Ok(job)
    }
}
