//! The runner's [`Sink`] on the results database: each test and each
//! repetition recorded the moment it exists.

use crate::file::Job;
use crate::runner::{Sink, SinkError, TestOutcome};
use iotoll_model::ResultDoc;
use iotoll_store::{Selection, Store};

pub(super) struct StoreSink<'a> {
    pub store: &'a mut Store,
    pub run: i64,
}

impl Sink for StoreSink<'_> {
    fn begin_test(&mut self, seq: usize, job: &Job) -> Result<i64, SinkError> {
        let (kind, group, rule) = (job.kind, Some(job.group.as_str()), job.rule.label());
        let id = self.store.add_test(
            self.run,
            seq as i64,
            &job.name,
            kind,
            group,
            &job.params,
            &rule,
        )?;
        Ok(id)
    }

    fn rep(&mut self, test: i64, rep: u32, doc: &ResultDoc) -> Result<(), SinkError> {
        // A measured repetition the database cannot take is kept in a file
        // and named, never just lost.
        self.store.add_rep(test, rep as i64, doc).map_err(|e| {
            match iotoll_store::keep_unstored(self.store.path(), doc) {
                Ok(p) => format!("{e}; the repetition's result is kept in {}", p.display()),
                Err(k) => format!("{e}; the result could not be kept either: {k}"),
            }
            .into()
        })
    }

    fn end_test(&mut self, test: i64, job: &Job, o: &TestOutcome) -> Result<(), SinkError> {
        let selection = Selection {
            rule: job.rule.label(),
            selected_rep: o.selected_rep().map(i64::from),
            spread_pct: o.selected.spread_pct,
            repeatable: o.repeatable,
            summary: o.selected.metrics.clone(),
        };
        self.store.finish_test(test, &selection)?;
        Ok(())
    }
}
