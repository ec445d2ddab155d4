//! Human and JSON renderings of a result document: JSON here, the human
//! table in `iotoll_report::text`.

/// The compact table printed after a run.
pub use iotoll_report::text::result as human;

pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    use std::io::Write as _;
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}

/// The README's sample of this output, from a fixed document.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/common/samples.rs"]
mod samples;

#[cfg(test)]
mod sample_tests {
    use super::{human, samples};

    #[test]
    fn readme_disk_run_sample_is_what_human_prints() {
        let text = include_str!("../tests/fixtures/disk-run.json");
        let mut doc: iotoll_model::ResultDoc =
            serde_json::from_str(text).expect("the fixture is a result document");
        iotoll_model::derive_metrics(&mut doc.metrics);
        samples::readme_sample("disk-run", &human(&doc));
    }
}
