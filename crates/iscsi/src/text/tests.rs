use super::*;

pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A negotiation of the default offer that has taken `answer`.
fn applied(answer: &[(&str, &str)]) -> Negotiation {
    let mut n = Negotiation::new(Offer::default());
    n.apply_response(&pairs(answer)).unwrap();
    n
}

/// Why a negotiation of the default offer refuses `answer`.
fn refused(answer: &[(&str, &str)]) -> NegotiationError {
    Negotiation::new(Offer::default())
        .apply_response(&pairs(answer))
        .unwrap_err()
}

#[test]
fn encode_decode_roundtrip() {
    let mut out = Vec::new();
    encode(
        &[("A", "1"), ("TargetAlias", "disk = one"), ("E", "")],
        &mut out,
    );
    assert_eq!(out, b"A=1\0TargetAlias=disk = one\0E=\0");
    out.extend_from_slice(&[0, 0]);
    assert_eq!(
        decode(&out).unwrap(),
        pairs(&[("A", "1"), ("TargetAlias", "disk = one"), ("E", "")])
    );
    assert_eq!(decode(b"").unwrap(), vec![]);
    assert_eq!(decode(b"\0\0\0\0").unwrap(), vec![]);
}

#[test]
fn decode_rejects() {
    assert!(matches!(
        decode(b"A=1\0B\0"),
        Err(TextError::MissingEquals { index: 1, .. })
    ));
    assert!(matches!(
        decode(b"=1\0"),
        Err(TextError::EmptyKey { index: 0 })
    ));
    assert!(matches!(
        decode(b"A=1\0\0B=2\0"),
        Err(TextError::EmptyPair { index: 1 })
    ));
    assert!(matches!(
        decode(b"A=\xff\0"),
        Err(TextError::NotUtf8 { index: 0 })
    ));
    assert_eq!(decode(b"A=1"), Err(TextError::Unterminated));
    let k63 = format!("{}=v\0", "K".repeat(63));
    assert!(decode(k63.as_bytes()).is_ok());
    let k64 = format!("{}=v\0", "K".repeat(64));
    assert!(matches!(
        decode(k64.as_bytes()),
        Err(TextError::KeyTooLong { len: 64, .. })
    ));
    let v = format!("CHAP_C=0x{}\0", "a".repeat(MAX_VALUE_LEN - 2));
    assert!(decode(v.as_bytes()).is_ok());
    let v = format!("CHAP_C=0x{}\0", "a".repeat(MAX_VALUE_LEN - 1));
    assert!(matches!(
        decode(v.as_bytes()),
        Err(TextError::ValueTooLong { .. })
    ));
}

#[test]
fn numbers() {
    assert_eq!(parse_number("8192"), Some(8192));
    assert_eq!(parse_number("0x2000"), Some(8192));
    assert_eq!(parse_number("0X2000"), Some(8192));
    assert_eq!(parse_number("+5"), None);
    assert_eq!(parse_number("0x"), None);
    assert_eq!(parse_number(""), None);
    assert_eq!(parse_number("12a"), None);
    assert_eq!(parse_number("99999999999999999999999"), None);
}

#[test]
fn offer_is_consistent() {
    let o = Offer::default();
    assert!(o.first_burst <= o.max_burst);
    let keys = offer_keys(&o);
    let get = |k: &str| keys.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
    assert_eq!(get("HeaderDigest"), Some("None"));
    assert_eq!(get("ErrorRecoveryLevel"), Some("0"));
    assert_eq!(get("InitialR2T"), Some("No"));
    assert_eq!(get("MaxConnections"), Some("1"));
    let keys = offer_keys(&Offer {
        data_digest: true,
        ..o
    });
    assert!(keys.contains(&("DataDigest".into(), "CRC32C,None".into())));
}

/// A typical LIO answer to our default offer.
fn lio_answer() -> Vec<(String, String)> {
    pairs(&[
        ("TargetAlias", "LIO Target"),
        ("TargetPortalGroupTag", "1"),
        ("HeaderDigest", "None"),
        ("DataDigest", "None"),
        ("MaxRecvDataSegmentLength", "8192"),
        ("ErrorRecoveryLevel", "0"),
        ("InitialR2T", "Yes"),
        ("ImmediateData", "Yes"),
        ("MaxBurstLength", "262144"),
        ("FirstBurstLength", "65536"),
        ("MaxOutstandingR2T", "1"),
        ("DataPDUInOrder", "Yes"),
        ("DataSequenceInOrder", "Yes"),
        ("MaxConnections", "1"),
        ("DefaultTime2Wait", "2"),
        ("DefaultTime2Retain", "0"),
    ])
}

#[test]
fn full_negotiation() {
    let mut n = Negotiation::new(Offer::default());
    assert_eq!(n.apply_response(&lio_answer()).unwrap(), vec![]);
    assert!(n.unanswered().is_empty());
    let p = n.params();
    assert_eq!(p.max_recv_dsl_initiator, 262144);
    assert_eq!(p.max_recv_dsl_target, 8192);
    assert_eq!(p.max_burst, 262144);
    assert_eq!(p.first_burst, 65536);
    assert!(p.initial_r2t);
    assert!(p.immediate_data);
    assert_eq!(p.default_time2retain, 0);
    assert_eq!(n.target_alias(), Some("LIO Target"));
    assert_eq!(n.target_portal_group_tag(), Some(1));
}

#[test]
fn absent_keys_keep_defaults() {
    let n = applied(&[("MaxBurstLength", "131072")]);
    let p = n.params();
    assert_eq!(p.max_recv_dsl_target, DEFAULT_MAX_RECV_DSL);
    assert_eq!(p.max_burst, 131072);
    assert_eq!(p.first_burst, 65536);
    assert!(n.unanswered().contains(&"FirstBurstLength"));
}

#[test]
fn list_digests() {
    let offer = Offer {
        header_digest: true,
        data_digest: true,
        ..Offer::default()
    };
    let mut n = Negotiation::new(offer.clone());
    let answer = pairs(&[("HeaderDigest", "CRC32C"), ("DataDigest", "None")]);
    n.apply_response(&answer).unwrap();
    assert!(n.params().header_digest);
    assert!(!n.params().data_digest);

    // Outside the offer: we did not offer CRC32C.
    let e = refused(&[("HeaderDigest", "CRC32C")]);
    assert!(
        matches!(e, NegotiationError::OutsideOffer { ref key, ref value, .. }
        if key == "HeaderDigest" && value == "CRC32C")
    );
    assert!(e.to_string().contains("HeaderDigest=CRC32C"), "{e}");

    let answer = pairs(&[("DataDigest", "CRC32C,None")]);
    assert!(Negotiation::new(offer).apply_response(&answer).is_err());
    refused(&[("DataDigest", "MD5")]);
}

#[test]
fn boolean_and() {
    assert!(!applied(&[("ImmediateData", "No")]).params().immediate_data);

    let mut n = Negotiation::new(Offer {
        immediate_data: false,
        ..Offer::default()
    });
    let answered = n.apply_response(&pairs(&[("ImmediateData", "Yes")]));
    let e = answered.unwrap_err();
    assert!(e.to_string().contains("AND"), "{e}");
    refused(&[("ImmediateData", "yes")]);
}

#[test]
fn boolean_or() {
    assert!(applied(&[("InitialR2T", "Yes")]).params().initial_r2t);
    assert!(!applied(&[("InitialR2T", "No")]).params().initial_r2t);

    let e = refused(&[("DataPDUInOrder", "No")]);
    assert!(e.to_string().contains("OR"), "{e}");
}

#[test]
fn numerical_min_and_max() {
    let n = applied(&[
        ("MaxBurstLength", "0x40000"),
        ("MaxOutstandingR2T", "1"),
        ("DefaultTime2Retain", "0"),
        ("DefaultTime2Wait", "10"),
    ]);
    assert_eq!(n.params().max_burst, 262144);
    assert_eq!(n.params().default_time2wait, 10);

    let e = refused(&[("MaxBurstLength", "16777215")]);
    assert!(e.to_string().contains("minimum"), "{e}");
    assert!(e.to_string().contains("MaxBurstLength=16777215"), "{e}");
    let e = refused(&[("DefaultTime2Wait", "1")]);
    assert!(e.to_string().contains("maximum"), "{e}");
    for answer in [
        ("MaxOutstandingR2T", "4"),
        ("ErrorRecoveryLevel", "1"),
        ("MaxConnections", "2"),
        ("DefaultTime2Retain", "20"),
        ("MaxBurstLength", "100"),
        ("FirstBurstLength", "lots"),
    ] {
        let e = refused(&[answer]);
        assert!(matches!(e, NegotiationError::OutsideOffer { .. }), "{e}");
    }
}

#[test]
fn first_burst_capped_by_max_burst() {
    let n = applied(&[("MaxBurstLength", "65536"), ("FirstBurstLength", "262144")]);
    assert_eq!(n.params().first_burst, 65536);
}

#[test]
fn declarative_max_recv_dsl() {
    let n = applied(&[("MaxRecvDataSegmentLength", "1048576")]);
    assert_eq!(n.params().max_recv_dsl_target, 1048576);
    assert_eq!(n.params().max_recv_dsl_initiator, 262144);
    for bad in ["511", "16777216", "x"] {
        let e = refused(&[("MaxRecvDataSegmentLength", bad)]);
        assert!(e.to_string().contains(bad), "{e}");
    }
}

#[test]
fn special_values() {
    let n = applied(&[("FirstBurstLength", "Irrelevant")]);
    assert_eq!(n.params().first_burst, 65536);

    let e = refused(&[("MaxConnections", "Reject")]);
    assert_eq!(
        e,
        NegotiationError::Rejected {
            key: "MaxConnections".into(),
            offered: "1".into()
        }
    );
    assert!(e.to_string().contains("MaxConnections=1"));
    let e = refused(&[("DataSequenceInOrder", "NotUnderstood")]);
    assert!(matches!(e, NegotiationError::NotUnderstood { .. }));

    // A special value for a key we never sent gets no answer.
    let (_, ans) = answering(Offer::default(), &[("X-foo", "Reject")]);
    assert_eq!(ans, vec![]);
}

/// A negotiation of `offer` that did not send the keys of `theirs`, and
/// its answers to the target offering them.
fn answering(offer: Offer, theirs: &[(&str, &str)]) -> (Negotiation, Vec<(String, String)>) {
    let mut n = Negotiation::new(offer);
    for (k, _) in theirs {
        n.pending.remove(*k);
    }
    let ans = n.apply_response(&pairs(theirs)).unwrap();
    (n, ans)
}

#[test]
fn target_offers_answered() {
    let (_, ans) = answering(
        Offer::default(),
        &[
            ("X-com.example.Thing", "1"),
            ("IFMarker", "Yes"),
            ("OFMarkInt", "2048~8192"),
            ("TargetAddress", "10.0.0.1:3260,1"),
        ],
    );
    assert_eq!(
        ans,
        pairs(&[
            ("X-com.example.Thing", "NotUnderstood"),
            ("IFMarker", "No"),
            ("OFMarkInt", "Reject"),
        ])
    );
}

#[test]
fn target_offers_a_key_we_did_not_send() {
    let offer = Offer {
        data_digest: true,
        ..Offer::default()
    };
    let (n, ans) = answering(
        offer,
        &[
            ("MaxBurstLength", "131072"),
            ("DataDigest", "None,CRC32C"),
            ("InitialR2T", "Yes"),
            ("ImmediateData", "No"),
            ("DefaultTime2Wait", "0"),
        ],
    );
    assert_eq!(
        ans,
        pairs(&[
            ("MaxBurstLength", "131072"),
            ("DataDigest", "None"),
            ("InitialR2T", "Yes"),
            ("ImmediateData", "No"),
            ("DefaultTime2Wait", "2"),
        ])
    );
    let p = n.params();
    assert_eq!(p.max_burst, 131072);
    assert!(!p.data_digest && p.initial_r2t && !p.immediate_data);
    assert_eq!(p.default_time2wait, 2);

    let theirs = [("MaxBurstLength", "1"), ("HeaderDigest", "CRC32C")];
    let (n, ans) = answering(Offer::default(), &theirs);
    assert_eq!(
        ans,
        pairs(&[("MaxBurstLength", "Reject"), ("HeaderDigest", "Reject")])
    );
    assert_eq!(n.params().max_burst, 262144);
}

#[test]
fn twice() {
    let mut n = applied(&[("MaxBurstLength", "65536")]);
    n.apply_response(&pairs(&[("MaxBurstLength", "65536")]))
        .unwrap();
    let e = n
        .apply_response(&pairs(&[("MaxBurstLength", "32768")]))
        .unwrap_err();
    assert!(matches!(e, NegotiationError::Twice { .. }));
}

proptest::proptest! {
    #[test]
    fn decode_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let _ = decode(&data);
    }

    #[test]
    fn roundtrip(kv in proptest::collection::vec(("[A-Za-z][A-Za-z0-9_.-]{0,62}", "[ -~]{0,100}"), 0..10)) {
        let mut out = Vec::new();
        encode(&kv, &mut out);
        proptest::prop_assert_eq!(decode(&out).unwrap(), kv);
    }
}
