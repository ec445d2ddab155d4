//! What `iotoll iscsi discover` and `iotoll iscsi luns` report: the
//! targets a portal offers, and a target's LUNs (INQUIRY and READ
//! CAPACITY of each).

use crate::session::{self, Discovered};
use crate::{scsi, url::IscsiUrl, Config, Error, ErrorKind, Result, Session, SessionInfo};
use serde::Serialize;

/// The targets a portal offers (SendTargets).
#[derive(Debug, Serialize)]
pub struct Discovery {
    pub portal: String,
    pub targets: Vec<Discovered>,
}

/// Logs in to `portal` for discovery and lists what it offers.
pub fn discover(portal: String, cfg: &Config) -> Result<Discovery> {
    let targets = session::discover(&portal, cfg)?;
    Ok(Discovery { portal, targets })
}

/// One LUN as `iscsi luns` reports it.
#[derive(Debug, Serialize)]
pub struct LunInfo {
    pub lun: u64,
    pub url: String,
    /// SCSI peripheral device type (0: disk).
    pub device_type: u8,
    pub vendor: String,
    pub product: String,
    pub revision: String,
    /// Absent when READ CAPACITY(16) failed (then `error` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A target's LUNs, and the session that read them.
#[derive(Debug, Serialize)]
pub struct LunList {
    pub portal: String,
    pub target: String,
    pub session: SessionInfo,
    pub luns: Vec<LunInfo>,
}

/// Logs in to the target of `u` and describes its LUNs (the one `u`
/// names, else every LUN REPORT LUNS lists), then logs out.
pub fn luns(u: &IscsiUrl, cfg: &Config) -> Result<LunList> {
    let mut s = Session::login(&u.portal(), &u.iqn, cfg, 1, None)?;
    let named = |e: Error| Error::new(e.kind, format!("{u}: {e}"));
    let numbers = match u.lun {
        Some(l) => vec![l],
        None => s.report_luns().map_err(named)?,
    };
    let luns = (numbers.into_iter())
        .map(|n| lun(&mut s, u, n))
        .collect::<Result<_, _>>()?;
    let list = LunList {
        portal: u.portal(),
        target: u.iqn.clone(),
        session: s.info.clone(),
        luns,
    };
    let _ = s.logout();
    Ok(list)
}

/// One LUN: its INQUIRY, and its capacity if it is a disk.
fn lun(s: &mut Session, u: &IscsiUrl, lun: u64) -> Result<LunInfo> {
    let i = (s.inquiry(lun)).map_err(|e| Error::new(e.kind, format!("{u}: {e}")))?;
    let mut info = LunInfo {
        lun,
        url: u.with_lun(lun).to_string(),
        device_type: i.peripheral_type,
        vendor: i.vendor,
        product: i.product,
        revision: i.revision,
        block_size: None,
        capacity_bytes: None,
        error: None,
    };
    if i.peripheral_qualifier != 0 {
        info.error = Some("no such LUN".into());
        return Ok(info);
    }
    if i.peripheral_type != 0 {
        let kind = scsi::device_type_name(i.peripheral_type);
        info.error = Some(format!("not a disk: {kind}"));
        return Ok(info);
    }
    match s.read_capacity(lun) {
        Ok(c) => {
            info.block_size = Some(c.block_size);
            info.capacity_bytes = Some(c.bytes());
        }
        // The LUN's own failure goes in its row; a session failure ends all.
        Err(e) if e.kind == ErrorKind::Scsi => info.error = Some(e.msg),
        Err(e) => return Err(e),
    }
    Ok(info)
}
