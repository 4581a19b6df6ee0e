//! One dump line → its [`Entity`] (or a frame line, or a bad line's message): the three parsers and the
//! dispatcher that gives every line one verdict, whichever of them reads it.
//!
//! - [`direct`]: reads a plain line in place with the [`cursor`], no copy, no tokenising (nearly every line of a
//!   dump);
//! - [`skim`]: copies out only the bytes the stage reads (with the same cursor), for simd-json;
//! - [`serde`]: simd-json and a hand-written serde visitor, on the skimmed copy or the whole line (the reference
//!   every other path must agree with, and the one that words a bad line's message).
//!
//! [`parse_line`] is the dispatcher: `--no-skim` and the default take different paths first and give the same
//! verdict and entity (property-tested on generated, mutated and real lines).

pub mod cursor;
pub mod direct;
pub mod serde;
pub mod skim;

pub use self::direct::Jump;
pub use self::serde::parse_entity;

use self::direct::entity;
use crate::dump::entity::{self as model, Langs, Line};

/// Parse one raw dump line (newline excluded; whitespace and the trailing comma are trimmed here) with the
/// verdict both parsing paths share, so that `use_skim = true` (the default) and `use_skim = false` (`--no-skim`) accept
/// and refuse exactly the same lines and give the same entity:
///
/// - a line that is not UTF-8 (anywhere) is malformed: JSON text is UTF-8 (RFC 8259 §8.1), and a line that is
///   not has been damaged; the check runs at memory speed ([`simdutf8`]);
/// - otherwise the line is accepted when simd-json parses the whole line, **or** when the skim
///   (this module) understands its structure and simd-json parses the skimmed copy. So a value the stage
///   does not read is checked for structure (terminated strings, balanced brackets), not for full JSON
///   validity — a number simd-json cannot represent (`1e999999`) or a stray literal inside a reference does not
///   make an entity a bad line in either mode, while anything wrong in a value the stage reads does;
/// - a refused line's message is the whole-line parser's, with byte offsets into the line as it is in the
///   dump (`at byte N of the line`), never into the skimmed copy.
///
/// With the skim, a line is first read in place by [`entity`] (this module), which takes the lines in the plain shape
/// Wikidata writes (nearly all) and gives exactly the entity the skimmed copy would; the lines it declines take
/// the skimmed copy. Then the path tried first is the fast one for the mode (skimmed copy, or whole line); the
/// other one only runs when the first fails (bad lines, or lines the skim does not understand), and its result
/// is then owned.
///
/// With a [`Jump`] (the extract stage always gives one: descriptions of items without all labels, and with
/// `extract.unlabelled_statements = "skip"` their statements), every path's entity is cut down by
/// [`Jump::apply`], and the direct reader jumps over what it would drop (checking only its structure);
/// a line is then also accepted when that jumping read takes it, whichever path is tried first, so both modes
/// still give the same verdict and the same entity.
pub fn parse_line<'s>(
    raw: &'s [u8],
    langs: &Langs,
    use_skim: bool,
    jump: Option<&Jump>,
    scratch: &'s mut Vec<u8>,
    buffers: &mut simd_json::Buffers,
) -> Result<Line<'s>, model::LineError> {
    let (a, b) = model::trim_line(raw);
    let line = raw.get(a..b).unwrap_or_default();
    let mut r = parse_trimmed(line, a, langs, use_skim, jump, scratch, buffers);
    if let (Some(j), Ok(Line::Entity(e))) = (jump, &mut r) {
        j.apply(e);
    }
    // `--no-skim` tries the jumping read last (only a line no other path takes gets this far).
    if let (Some(j), Err(_), false) = (jump, &r, use_skim) {
        if let Ok(text) = std::str::from_utf8(line) {
            if let Ok(mut e) = entity(text, langs, Some(j)) {
                j.apply(&mut e);
                return Ok(Line::Entity(e));
            }
        }
    }
    r
}

/// [`parse_line`] of the trimmed `line` (at byte `a` of the raw line), before the jump's cut.
fn parse_trimmed<'s>(
    line: &'s [u8],
    a: usize,
    langs: &Langs,
    use_skim: bool,
    jump: Option<&Jump>,
    scratch: &'s mut Vec<u8>,
    buffers: &mut simd_json::Buffers,
) -> Result<Line<'s>, model::LineError> {
    if line.first() != Some(&b'{') {
        // Frames and lines that are no object: the whole-line verdict (no skim involved).
        scratch.clear();
        scratch.extend_from_slice(line);
        return serde::parse_entity_at(scratch, langs, buffers, a);
    }
    let text = match simdutf8::compat::from_utf8(line) {
        Ok(t) => t,
        Err(e) => {
            return Err(model::LineError {
                kind: "json",
                message: format!(
                    "invalid UTF-8 at byte {} of the line",
                    e.valid_up_to().saturating_add(a)
                ),
            })
        }
    };
    // Plain lines (nearly all of a dump) are read in place: the same entity as the skimmed copy would give
    // (`dump::direct`), with neither the copy nor simd-json.
    if use_skim {
        if let Ok(e) = entity(text, langs, jump) {
            return Ok(Line::Entity(e));
        }
    }
    let skimmed = use_skim && skim::skim(line, langs, scratch).is_ok();
    if !skimmed {
        scratch.clear();
        scratch.extend_from_slice(line);
    }
    let whole_first = !skimmed;
    let first = match serde::parse_entity_at(scratch, langs, buffers, a) {
        Ok(l) => return Ok(l),
        Err(e) => e,
    };
    // The other path, in a buffer of its own.
    let mut other = Vec::new();
    let other_ok = if whole_first {
        skim::skim(line, langs, &mut other).is_ok()
    } else {
        other.extend_from_slice(line);
        true
    };
    if other_ok {
        match serde::parse_entity_at(&mut other, langs, buffers, a) {
            Ok(l) => return Ok(l.into_owned()),
            Err(e) if !whole_first => return Err(e),
            Err(_) => {}
        }
    }
    Err(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::Pid;
    use crate::dump::entity::{Entity, Kind, SnakCounts};
    use crate::dump::line::skim::tests::{
        eight, langs, mutated_lines, real_fixture_lines, synth_lines,
    };

    /// `parse_line` with and without the skim, as Debug strings.
    fn modes(raw: &[u8], langs: &Langs) -> (String, String) {
        modes_with(raw, langs, None)
    }

    /// [`modes`] with a jump.
    fn modes_with(raw: &[u8], langs: &Langs, jump: Option<&Jump>) -> (String, String) {
        let mut buffers = simd_json::Buffers::new(1024);
        let mut scratch = Vec::new();
        let on = format!(
            "{:?}",
            parse_line(raw, langs, true, jump, &mut scratch, &mut buffers)
        );
        let off = format!(
            "{:?}",
            parse_line(raw, langs, false, jump, &mut scratch, &mut buffers)
        );
        (on, off)
    }

    /// The default config's jump for `langs`: `mul` stands in for every language but Korean and Japanese; the
    /// default transitive seed is kept.
    fn jump_for(langs: &Langs) -> Jump {
        let mut keep: Vec<Pid> = [131, 150, 171, 276, 279, 361, 527, 706].map(Pid).to_vec();
        keep.sort_unstable();
        Jump {
            mul_ok: langs.langs.iter().map(|l| l != "ko" && l != "ja").collect(),
            keep,
            statements: true,
        }
    }

    /// The oracle for a jump: the entity read without it, cut down by hand (items without all labels lose their
    /// descriptions and, with `statements`, keep only the seed's statements and no snak counts).
    fn cut_by_hand<'a>(mut e: Entity<'a>, langs: &Langs, statements: bool) -> Entity<'a> {
        let item = match &e.kind {
            Some(k) => *k == Kind::Item,
            None => e.id.as_deref().is_some_and(|i| i.starts_with('Q')),
        };
        let labelled = langs.langs.iter().enumerate().all(|(i, l)| {
            e.labels[i].as_deref().is_some_and(|t| !t.is_empty())
                || (l != "ko" && l != "ja" && e.mul_label.as_deref().is_some_and(|m| !m.is_empty()))
        });
        if item && !labelled {
            let seed = [
                "P131", "P150", "P171", "P276", "P279", "P361", "P527", "P706",
            ];
            if statements {
                e.statements.retain(|s| seed.contains(&s.property.as_ref()));
                e.snaks = SnakCounts::default();
            }
            e.descriptions = vec![None; langs.langs.len()];
        }
        e
    }

    /// With `jump`, both modes give the same verdict on `l`, and for a line taken without a jump, the entity read
    /// without it cut down by hand ([`cut_by_hand`], with the jump's `statements`). (A line refused without
    /// the jump may be taken with it: what it jumps over is not read.) Returns whether the cut changed the entity.
    fn agrees_with_the_cut(l: &[u8], langs: &Langs, jump: &Jump) -> bool {
        let mut buffers = simd_json::Buffers::new(1024);
        let mut scratch = Vec::new();
        let (want, changed) = match parse_line(l, langs, true, None, &mut scratch, &mut buffers) {
            Ok(Line::Entity(e)) => {
                let before = format!("{e:?}");
                let e = cut_by_hand(e.into_owned(), langs, jump.statements);
                let changed = format!("{e:?}") != before;
                (format!("{:?}", Ok::<_, ()>(Line::Entity(e))), changed)
            }
            other => (format!("{:?}", other.map_err(|_| ())), false),
        };
        let (on, off) = modes_with(l, langs, Some(jump));
        assert_eq!(on, off, "{}", String::from_utf8_lossy(l));
        if want.starts_with("Ok(") {
            assert_eq!(on, want, "{}", String::from_utf8_lossy(l));
        }
        changed
    }

    /// 1,500 generated lines, and every real fixture line when `SWORD_REAL_FIXTURES` is set.
    fn generated_and_real_lines() -> Vec<Vec<u8>> {
        let mut ls = synth_lines(1500, 4, 0.3);
        if let Ok(root) = std::env::var("SWORD_REAL_FIXTURES") {
            for (_, real) in real_fixture_lines(std::path::Path::new(&root)) {
                ls.extend(real);
            }
        }
        ls
    }

    /// On every generated line, and on every real fixture line (`SWORD_REAL_FIXTURES`): with a jump, both modes
    /// give the entity read without it and cut down by hand, and the direct reader takes the same lines.
    #[test]
    fn a_jump_gives_the_entity_cut_down() {
        let ls = generated_and_real_lines();
        let (mut cut, mut direct) = (0usize, 0usize);
        for l in &ls {
            for langs in [eight(), langs()] {
                let jump = jump_for(&langs);
                cut += usize::from(agrees_with_the_cut(l, &langs, &jump));
                // The jumping read takes every line the walk takes (it only reads less).
                let text = std::str::from_utf8(l).unwrap_or("");
                let (a, b) = crate::dump::entity::trim_line(text.as_bytes());
                if entity(&text[a..b], &langs, None).is_ok() {
                    assert!(
                        entity(&text[a..b], &langs, Some(&jump)).is_ok(),
                        "{}",
                        &text[a..b]
                    );
                    direct += 1;
                }
            }
        }
        assert!(cut > 1000, "only {cut} entities were cut down");
        assert!(
            direct * 100 >= ls.len() * 2 * 95,
            "{direct} of {}",
            ls.len() * 2
        );
    }

    /// The jump of the default mode (`extract.unlabelled_statements = "read"`) cuts only the descriptions of items
    /// without all labels: on every generated line, and every real fixture line, both modes give the entity read
    /// without a jump with those descriptions dropped, the same statements and snak counts; a description that
    /// is no JSON no longer makes such an item's line bad (a labelled item's still does).
    #[test]
    fn the_default_jump_cuts_only_the_descriptions() {
        let ls = generated_and_real_lines();
        let mut cut = 0usize;
        for l in &ls {
            for langs in [eight(), langs()] {
                let jump = Jump {
                    statements: false,
                    ..jump_for(&langs)
                };
                cut += usize::from(agrees_with_the_cut(l, &langs, &jump));
            }
        }
        assert!(cut > 1000, "only {cut} entities lost descriptions");
        let langs = langs();
        let jump = Jump {
            statements: false,
            ..jump_for(&langs)
        };
        let en = r#""en":{"language":"en","value":"one"}"#;
        let ko = r#""ko":{"language":"ko","value":"하나"}"#;
        let seed = r#""P31":[{"mainsnak":{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item","numeric-id":7,"id":"Q7"},"type":"wikibase-entityid"},"datatype":"wikibase-item"},"type":"statement","id":"Q1$a","rank":"normal"}]"#;
        let line = |labels: &str| {
            format!(
                r#"{{"type":"item","id":"Q1","labels":{{{labels}}},"descriptions":{{"en":{{"value":nul}}}},"claims":{{{seed}}}}}"#
            )
        };
        // Unlabelled in Korean: the bad description is not read, the statement is.
        let (on, off) = modes_with(line(en).as_bytes(), &langs, Some(&jump));
        assert_eq!(on, off);
        assert!(
            on.starts_with("Ok(Entity")
                && on.contains(r#"property: "P31""#)
                && on.contains("value: 1"),
            "{on}"
        );
        // Labelled in both: it is read, and refused.
        let (on, off) = modes_with(line(&format!("{en},{ko}")).as_bytes(), &langs, Some(&jump));
        assert_eq!(on, off);
        assert!(on.starts_with("Err("), "{on}");
    }

    /// The jumping read checks the structure of what it jumps over, not its content, only where it may jump
    /// (an item without all labels, `type` and `labels` before `claims`), and never in a kept property.
    #[test]
    fn a_jump_checks_only_the_structure_of_what_it_drops() {
        let langs = langs();
        let jump = jump_for(&langs);
        let seed = r#""P131":[{"mainsnak":{"snaktype":"value","property":"P131","datavalue":{"value":{"entity-type":"item","numeric-id":7,"id":"Q7"},"type":"wikibase-entityid"},"datatype":"wikibase-item"},"type":"statement","id":"Q1$a","rank":"normal"}]"#;
        let odd = r#""P31":[{"mainsnak":nul},{"x":[01,"\q"]}]"#;
        let en = r#""en":{"language":"en","value":"one"}"#;
        let ko = r#""ko":{"language":"ko","value":"하나"}"#;
        let line = |head: &str, labels: &str, claims: &str| {
            format!(r#"{{{head}"labels":{{{labels}}},"claims":{{{claims}}}}}"#)
        };
        // Unlabelled in Korean: P31 is jumped over (its content is no JSON), P131 is read; both modes agree.
        let l = line(r#""type":"item","id":"Q1","#, en, &format!("{odd},{seed}"));
        let (on, off) = modes_with(l.as_bytes(), &langs, Some(&jump));
        assert_eq!(on, off);
        assert!(
            on.starts_with("Ok(Entity") && on.contains(r#"property: "P131""#),
            "{on}"
        );
        assert!(!on.contains(r#""P31""#), "{on}");
        // So are the descriptions of such an item (never written): a description that is no JSON is read
        // (and refused) only without the jump.
        let desc = format!(
            r#"{{"type":"item","id":"Q1","labels":{{{en}}},"descriptions":{{"en":{{"value":nul}}}},"claims":{{{seed}}}}}"#
        );
        let (on, off) = modes_with(desc.as_bytes(), &langs, Some(&jump));
        assert_eq!(on, off);
        assert!(
            on.starts_with("Ok(Entity") && on.contains("descriptions: [None, None]"),
            "{on}"
        );
        assert!(modes(desc.as_bytes(), &langs).0.starts_with("Err("));
        // Without the jump the same line is malformed, in both modes.
        let (on, off) = modes(l.as_bytes(), &langs);
        assert_eq!(on, off);
        assert!(on.starts_with("Err("), "{on}");
        // Unbalanced brackets are still malformed.
        let cut = line(
            r#""type":"item","id":"Q1","#,
            en,
            r#""P31":[{"mainsnak":{]"#,
        );
        let (on, off) = modes_with(cut.as_bytes(), &langs, Some(&jump));
        assert_eq!(on, off);
        assert!(on.starts_with("Err("), "{on}");
        // Where it may not jump, the content is read (and refused): labelled items, properties, a malformed
        // kept property, claims before the labels, no `type` before the claims.
        let refused = [
            line(r#""type":"item","id":"Q1","#, &format!("{en},{ko}"), odd),
            line(r#""type":"property","id":"P1","#, en, odd),
            line(
                r#""type":"item","id":"Q1","#,
                en,
                r#""P131":[{"mainsnak":nul}]"#,
            ),
            format!(r#"{{"type":"item","id":"Q1","claims":{{{odd}}},"labels":{{{en}}}}}"#),
            line(r#""id":"Q1","#, en, odd),
        ];
        for l in &refused {
            let (on, off) = modes_with(l.as_bytes(), &langs, Some(&jump));
            assert_eq!(on, off, "{l}");
            assert!(on.starts_with("Err("), "{l}: {on}");
        }
        // `mul` stands in for English, not for Korean.
        let mul = r#""mul":{"language":"mul","value":"m"}"#;
        let l = line(r#""type":"item","id":"Q1","#, &format!("{mul},{ko}"), odd);
        assert!(modes_with(l.as_bytes(), &langs, Some(&jump))
            .0
            .starts_with("Err("));
        let l = line(r#""type":"item","id":"Q1","#, &format!("{mul},{en}"), odd);
        assert!(modes_with(l.as_bytes(), &langs, Some(&jump))
            .0
            .starts_with("Ok("));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The verdict does not depend on the mode (no input may make the two modes disagree): on cut, overwritten or extended generated lines
        /// (legacy and current serialisations), `--no-skim` and the default accept the same lines with the same
        /// entity, and refuse the same lines with the same message.
        #[test]
        fn both_modes_give_the_same_verdict_on_mutated_lines(
            l in mutated_lines(5, vec![
                &b"1e999999"[..], b"\xff", b"\"", b"\\", b"{", b"]", b",", b"tru", b"\\u00", b"\xc3\x28",
                b"\xed\xa0\x80", b"-", b"01", b"null",
            ]),
        ) {
            for langs in [eight(), langs()] {
                let (on, off) = modes(&l, &langs);
                proptest::prop_assert_eq!(on, off);
                // And with a jump (`extract.unlabelled_statements = "skip"`), and with the default mode's jump
                // (descriptions only).
                let (on, off) = modes_with(&l, &langs, Some(&jump_for(&langs)));
                proptest::prop_assert_eq!(on, off);
                let descriptions = Jump { statements: false, ..jump_for(&langs) };
                let (on, off) = modes_with(&l, &langs, Some(&descriptions));
                proptest::prop_assert_eq!(on, off);
            }
        }
    }

    #[test]
    fn both_modes_agree_on_huge_numbers_and_bad_utf8_in_dropped_and_read_values() {
        // Inside a value the stage drops (an alias, a reference): a number simd-json cannot hold is accepted
        // by both modes; invalid UTF-8 is refused by both, at its byte in the line.
        let good = r#"{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"one"}},"aliases":{"en":[{"value":1e999999}]},"claims":{"P31":[{"mainsnak":{"snaktype":"value","datavalue":{"value":{"entity-type":"item","id":"Q5"},"type":"wikibase-entityid"}},"references":[{"snaks":{"P1":[{"x":1e999999}]}}],"rank":"normal"}]}}"#;
        for langs in [eight(), langs()] {
            let (on, off) = modes(good.as_bytes(), &langs);
            assert!(on.starts_with("Ok(Entity"), "{on}");
            assert_eq!(on, off);
        }
        let mut bad = br#"  {"type":"item","id":"Q1","aliases":{"en":[{"value":"x"#.to_vec();
        let at = bad.len();
        bad.extend_from_slice(b"\xff\"}]}},");
        let (on, off) = modes(&bad, &eight());
        assert_eq!(on, off);
        assert!(
            on.contains(&format!("invalid UTF-8 at byte {at} of the line")),
            "{on}"
        );
        // In a value the stage reads: refused by both, the position counted in the line as it is in the dump
        // (two spaces of indentation included), not in the skimmed copy.
        let line = r#"  {"type":"item","aliases":{"en":[]},"lastrevid":1e999999,"id":"Q1"}"#;
        let (on, off) = modes(line.as_bytes(), &eight());
        assert_eq!(on, off);
        let at = line.find("1e999999").unwrap();
        assert!(
            on.contains("Err(") && on.contains(&format!("at byte {at} of the line")),
            "{on}"
        );
    }
}
