//! What a measuring library's error says about a single measurement: the
//! user's to fix, or a run that failed after its workload started (with
//! the partial result), or neither.

use iotoll_model::{ResultDoc, ResultStatus};

/// An error of `iotoll_disk::run` or `iotoll_net::run`, as a session of
/// one test reads it.
pub trait MeasureError: std::error::Error + Send + Sync + Sized + 'static {
    /// The user's to fix on the command line.
    fn is_usage(&self) -> bool;
    /// A run that went wrong after its workload started: the failure and
    /// the partial result, marked `failed`; otherwise the error back.
    fn into_failed(self) -> Result<(String, ResultDoc), Self>;
}

macro_rules! measure_error {
    ($($e:path),*) => {$(
        impl MeasureError for $e {
            fn is_usage(&self) -> bool {
                <$e>::is_usage(self)
            }
            fn into_failed(self) -> Result<(String, ResultDoc), Self> {
                match self {
                    Self::Failed { msg, mut doc } => {
                        doc.status = ResultStatus::Failed;
                        Ok((msg, *doc))
                    }
                    e => Err(e),
                }
            }
        }
    )*};
}

measure_error!(iotoll_net::NetError, iotoll_disk::DiskError);
