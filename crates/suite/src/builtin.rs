//! The built-in studies (docs/suites.md), embedded in the binary.

pub const BUILTIN: &[(&str, &str)] = &[
    ("quick", include_str!("../suites/quick.toml")),
    (
        "iscsi-initiator-study",
        include_str!("../suites/iscsi-initiator-study.toml"),
    ),
    (
        "adapter-vs-hba-study",
        include_str!("../suites/adapter-vs-hba-study.toml"),
    ),
    (
        "hw-iscsi-study",
        include_str!("../suites/hw-iscsi-study.toml"),
    ),
    (
        "ten-gig-adapter-study",
        include_str!("../suites/ten-gig-adapter-study.toml"),
    ),
    (
        "bidirectional-transfer-study",
        include_str!("../suites/bidirectional-transfer-study.toml"),
    ),
];

pub fn find(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
