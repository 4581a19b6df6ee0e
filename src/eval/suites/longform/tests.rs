//! Tests of the long-form scoring against hand-computed cases and the published file.
use super::*;

fn read(text: &str) -> Result<CountGroups> {
    read_counts(text.as_bytes(), Path::new("c.jsonl"))
}

#[test]
fn counts_are_validated_with_their_position() {
    let g = read("{\"supported\":2,\"not_supported\":1}\n").unwrap();
    assert_eq!(g["all"], [(2, 1, 0)]);
    for (line, want) in [
        (
            "{\"supported\":1,\"not_supported\":18446744073709551615}",
            "count `not_supported` is 18446744073709551615, more than 100000",
        ),
        (
            "{\"supported\":-1,\"not_supported\":0}",
            "count `supported` is negative (-1)",
        ),
        (
            "{\"supported\":1.5,\"not_supported\":0}",
            "count `supported` is not a whole number (1.5)",
        ),
        (
            "{\"supported\":\"3\",\"not_supported\":0}",
            "count `supported` is not a number (\"3\")",
        ),
        (
            "{\"supported\":1,\"not_supported\":0,\"irrelevant\":-2}",
            "count `irrelevant` is negative (-2)",
        ),
        ("{\"supported\":1}", "no count `not_supported`"),
        ("[1]", "not a JSON object"),
    ] {
        let text = format!("{{\"supported\":0,\"not_supported\":0}}\n{line}\n");
        let e = read(&text).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("line 2, byte offset 34") && msg.contains(want),
            "{line}: {msg}"
        );
        assert_eq!(e.exit_code(), 2);
    }
    assert!(read("\n\n").unwrap_err().to_string().contains("no answer"));
}

#[test]
fn k_parses_and_median_rounds_half_up() {
    assert_eq!("8".parse::<K>(), Ok(K::Fixed(8)));
    assert_eq!("AUTO".parse::<K>(), Ok(K::Auto));
    assert!("0".parse::<K>().is_err());
    assert!("-3".parse::<K>().is_err());
    assert!("1000001".parse::<K>().is_err());
    assert_eq!(median_k(&[3, 9, 1]), Some(3));
    assert_eq!(median_k(&[6, 7]), Some(6)); // 6.5 -> 6, as int(median)
    assert_eq!(median_k(&[0, 0]), Some(1));
    assert_eq!(median_k(&[]), None);
}

/// Nine hand-made records covering every skip and odd reason (see the expected counts below).
pub(crate) fn hand_records() -> Value {
    let dec = |f: &str, c: Value| serde_json::json!({"fact": f, "correct": c, "rational": []});
    let rec = |success: Value, facts: Vec<&str>, decisions: Vec<Value>| {
        serde_json::json!({"question": "q", "query": "q", "response": {"success": success, "answer": "x"},
                "factuality": {"answer": "x", "facts": facts, "fact_check": {"decisions": decisions}}})
    };
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    let ten: Vec<&str> = vec!["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"];
    let mut r8 = rec(
        Value::Null,
        ten.clone(),
        ten.iter().map(|x| dec(x, Value::Bool(true))).collect(),
    );
    r8["response"].as_object_mut().unwrap().remove("success");
    serde_json::json!({"model": "m", "results": [
        // r0: 3 facts, 2 supported of 3 checked.
        rec(t.clone(), vec!["a", "b", "c"], vec![dec("a", t.clone()), dec("b", f.clone()), dec("c", t.clone())]),
        // r1: a failed answer.
        rec(f.clone(), vec![], vec![]),
        // r2: facts, no verdicts.
        rec(t.clone(), vec!["a", "b"], vec![]),
        // r3: 4 facts, a decision for a fact not in the list, a verdict that is not a bool.
        rec(t.clone(), vec!["a", "b", "c", "d"], vec![dec("a", t.clone()), dec("x", t.clone()), dec("c", Value::String("yes".into()))]),
        // r4: no factuality.
        serde_json::json!({"question": "q", "response": {"success": true, "answer": "x"}}),
        // r5: this project's chain could not decompose the answer.
        serde_json::json!({"response": {"success": true, "answer": "x"}, "factuality": {"answer": "x", "facts": [], "fact_check": {"decisions": []}, "error": "decomposition unreadable"}}),
        // r6: no facts.
        rec(t.clone(), vec![], vec![]),
        // r7: not an object.
        5,
        // r8: no success flag, 10 of 10 supported.
        r8,
    ]})
}

#[test]
fn hand_computed_file_scores() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("law_basic_adv.json");
    std::fs::write(&p, hand_records().to_string()).unwrap();
    let f = read_fact_file(&p, &[]).unwrap().unwrap();
    assert_eq!(f.derived.model, "m");
    assert_eq!(f.derived.condition, Condition::Adversarial);
    let skips: Vec<Option<Skip>> = f.answers.iter().map(|a| a.skip).collect();
    use Skip::*;
    assert_eq!(
        skips,
        [
            None,
            Some(FailedAnswer),
            Some(NoVerdicts),
            None,
            Some(NoFactuality),
            Some(FactCheckFailed),
            Some(NoFacts),
            Some(MalformedRecord),
            None
        ]
    );
    assert_eq!(
        (
            f.answers[0].facts,
            f.answers[0].checked,
            f.answers[0].supported
        ),
        (3, 3, 2)
    );
    assert_eq!(
        (
            f.answers[3].facts,
            f.answers[3].checked,
            f.answers[3].supported
        ),
        (4, 2, 2)
    );
    assert_eq!(
        f.answers[3].odd,
        [Odd::DecisionsNotMatchingFacts, Odd::VerdictNotBool]
    );
    assert_eq!(f.answers[2].odd, [Odd::DecisionsNotMatchingFacts]);
    assert_eq!(f.answers[8].odd, [Odd::NoSuccessFlag]);
    let s = score(std::slice::from_ref(&f), vec![], K::Fixed(8), 50, 1);
    let fs = &s.files[0];
    assert_eq!((fs.answers, fs.scored), (9, 3));
    assert_eq!(fs.skipped.values().sum::<usize>(), 6);
    assert_eq!(fs.odd[&Odd::DecisionsNotMatchingFacts], 2);
    // F1@8: r0 S=2,T=3: P=2/3, R=1/4 -> 4/11; r3 S=2,T=2: P=1, R=1/4 -> 0.4; r8 P=R=1 -> 1.
    let m = fs.scores.as_ref().unwrap();
    let want = 100.0 * (4.0 / 11.0 + 0.4 + 1.0) / 3.0;
    assert!((m.mean_f1_at_k.estimate - want).abs() < 1e-9, "{m:?}");
    assert!(m.mean_f1_at_k.lo <= want && want <= m.mean_f1_at_k.hi);
    assert!((m.mean_facts - 17.0 / 3.0).abs() < 1e-12);
    assert!((m.mean_checked - 5.0).abs() < 1e-12);
    assert!((m.mean_supported - 14.0 / 3.0).abs() < 1e-12);
    // Every answer, skipped ones scoring 0 (the authors' notebook's average): 9 answers.
    assert!((fs.mean_f1_at_k_all_answers - 100.0 * (4.0 / 11.0 + 0.4 + 1.0) / 9.0).abs() < 1e-9);
    assert!((fs.mean_facts_all_answers - 19.0 / 9.0).abs() < 1e-12);
    // K auto: the median of 3,0,2,4,0,0,0,0,10 is 0, so K = 1: F1@1 = 0.8, 1, 1.
    let s = score(std::slice::from_ref(&f), vec![], K::Auto, 0, 1);
    assert_eq!(s.k, 1);
    let m = s.files[0].scores.as_ref().unwrap();
    assert!((m.mean_f1_at_k.estimate - 100.0 * 2.8 / 3.0).abs() < 1e-9);
    assert!(
        m.mean_f1_at_k.lo.is_nan(),
        "no bootstrap replicates, no interval"
    );
}

#[test]
fn conditions_from_names() {
    use Condition::*;
    for (name, want) in [
        ("law_basic_adv.json", Some(Adversarial)),
        ("law_basic_non_adv.json", Some(NonAdversarial)),
        (
            "Qwen-Qwen3-30B-A3B-Instruct-2507-finance_advanced_non_ad.json",
            Some(NonAdversarial),
        ),
        (
            "Qwen-Qwen3-30B-A3B-Instruct-2507-law_basic_golden_non_ad.json",
            Some(NonAdversarial),
        ),
        ("health_advanced_adv.json", Some(Adversarial)),
        ("adversarial_prompt", Some(Adversarial)),
        ("adversial", Some(Adversarial)),
        ("non_adversial_prompt", Some(NonAdversarial)),
        ("non_adversial", Some(NonAdversarial)),
        ("nonadversarial", Some(NonAdversarial)),
        ("law_advanced_golden.json", None),
        ("Qwen-Qwen3-Next-80B-A3B-Instruct", None),
        ("finance_advanced.json", None),
    ] {
        assert_eq!(condition_of_name(name), want, "{name}");
    }
}
