//! `--ssh`: starting agents on the hosts of a hosts file through the system ssh.
