//! The few facts about processes every crate asks the kernel the same way.

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

/// Whether process `pid` exists (EPERM: it does, as another user's). A
/// pid outside the kernel's range is no process.
pub fn pid_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    pid > 0 && matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// This process's effective user id.
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_no_pid_out_of_range_is() {
        assert!(pid_alive(std::process::id() as i64) && pid_alive(1));
        assert!(!pid_alive(0) && !pid_alive(-1) && !pid_alive(i64::MAX));
        // What `as i32` would have made of it: this process's pid.
        assert!(!pid_alive((1i64 << 32) + std::process::id() as i64));
    }
}
