//! Entity lines: items, properties and lexemes, one at a time, each from its own random stream.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Entity lines.

pub(super) struct Gen<'m> {
    pub(super) m: &'m Model,
    pub(super) rng: ChaCha8Rng,
    pub(super) legacy: bool,
}

/// A value snak's datavalue, written into `j` (without the surrounding snak).
impl<'m> Gen<'m> {
    pub(super) fn item_value(&mut self, j: &mut J, q: Qid) {
        self.entity_value(j, "item", b'Q', q.0);
    }

    /// A property value's datavalue (without the surrounding snak).
    pub(super) fn prop_value(&mut self, j: &mut J, p: Pid) {
        self.entity_value(j, "property", b'P', p.0);
    }

    /// An item's or a property's `wikibase-entityid` datavalue: the numeric id, and the full id (`letter`
    /// then the number) unless the line is in the 2015 serialisation.
    fn entity_value(&self, j: &mut J, entity_type: &str, letter: u8, n: u64) {
        j.raw("{\"value\":{\"entity-type\":\"");
        j.raw(entity_type);
        j.raw("\",\"numeric-id\":");
        j.num(n);
        if !self.legacy {
            j.raw(",\"id\":");
            j.id(letter, n);
        }
        j.raw("},\"type\":\"wikibase-entityid\"}");
    }

    pub(super) fn time_value(&mut self, j: &mut J) {
        let year = self.rng.random_range(1000..2025);
        let precision = [9, 10, 11, 11, 11][self.rng.random_range(0..5)];
        let (mo, d) = if precision == 9 {
            (0, 0)
        } else {
            (self.rng.random_range(1..13), self.rng.random_range(1..29))
        };
        let time = format!("+{year:04}-{mo:02}-{d:02}T00:00:00Z");
        j.raw("{\"value\":{\"time\":");
        j.str(&time);
        j.raw(",\"timezone\":0,\"before\":0,\"after\":0,\"precision\":");
        j.num(precision);
        j.raw(",\"calendarmodel\":");
        j.str("http://www.wikidata.org/entity/Q1985727");
        j.raw("},\"type\":\"time\"}");
    }

    pub(super) fn datavalue(&mut self, j: &mut J, datatype: &str, name: &str) {
        match datatype {
            "time" => self.time_value(j),
            "quantity" => {
                let amount = (10f64.powf(self.rng.random_range(0.0..7.0))).round() as u64;
                j.raw("{\"value\":{\"amount\":");
                j.str(&format!("+{amount}"));
                if self.rng.random_bool(0.2) {
                    j.raw(",\"upperBound\":");
                    j.str(&format!("+{}", amount + 1));
                    j.raw(",\"lowerBound\":");
                    j.str(&format!("+{}", amount.saturating_sub(1)));
                }
                j.raw(",\"unit\":");
                if self.rng.random_bool(0.5) {
                    j.str("1");
                } else {
                    j.str("http://www.wikidata.org/entity/Q11573");
                }
                j.raw("},\"type\":\"quantity\"}");
            }
            "globe-coordinate" => {
                let lat: f64 = self.rng.random_range(-90.0..90.0);
                let lon: f64 = self.rng.random_range(-180.0..180.0);
                j.raw("{\"value\":{\"latitude\":");
                j.num(format!("{lat:.6}"));
                j.raw(",\"longitude\":");
                j.num(format!("{lon:.6}"));
                j.raw(",\"altitude\":null,\"precision\":");
                j.raw(if self.rng.random_bool(0.1) {
                    "null"
                } else {
                    "0.0001"
                });
                j.raw(",\"globe\":");
                j.str("http://www.wikidata.org/entity/Q2");
                j.raw("},\"type\":\"globecoordinate\"}");
            }
            "monolingualtext" => {
                let lang = ["en", "fr", "de", "ja", "en-gb", "es"][self.rng.random_range(0..6)];
                let text = script_name(lang, name, &mut self.rng);
                j.raw("{\"value\":{\"text\":");
                j.str(&text);
                j.raw(",\"language\":");
                j.str(lang);
                j.raw("},\"type\":\"monolingualtext\"}");
            }
            "url" => {
                let s = format!(
                    "https://www.example.org/{}/{}",
                    name.replace(' ', "_").to_lowercase(),
                    self.rng.random_range(1..100_000)
                );
                j.raw("{\"value\":");
                j.str(&s);
                j.raw(",\"type\":\"string\"}");
            }
            "commonsMedia" => {
                j.raw("{\"value\":");
                j.str(&format!("{name} {}.jpg", self.rng.random_range(1..50)));
                j.raw(",\"type\":\"string\"}");
            }
            "wikibase-property" => {
                let p = self.m.props[self.rng.random_range(0..self.m.props.len())].id;
                self.prop_value(j, p);
            }
            "wikibase-lexeme" => {
                let l = self.rng.random_range(1..500_000);
                j.raw("{\"value\":{\"entity-type\":\"lexeme\",\"numeric-id\":");
                j.num(l);
                j.raw(",\"id\":");
                j.str(&format!("L{l}"));
                j.raw("},\"type\":\"wikibase-entityid\"}");
            }
            "wikibase-sense" | "wikibase-form" => {
                let l = self.rng.random_range(1..500_000);
                let (et, s) = if datatype == "wikibase-sense" {
                    ("sense", "S")
                } else {
                    ("form", "F")
                };
                j.raw("{\"value\":{\"entity-type\":");
                j.str(et);
                j.raw(",\"id\":");
                j.str(&format!("L{l}-{s}{}", self.rng.random_range(1..4)));
                j.raw("},\"type\":\"wikibase-entityid\"}");
            }
            "math" => {
                j.raw("{\"value\":");
                j.str("E=mc^2 \\cdot \\frac{a}{b}");
                j.raw(",\"type\":\"string\"}");
            }
            "external-id" => {
                j.raw("{\"value\":");
                j.digits(self.rng.random_range(10_000u64..999_999_999));
                j.raw(",\"type\":\"string\"}");
            }
            _ => {
                // string and the rarer string-valued datatypes (musical-notation, tabular-data, geo-shape, ...).
                j.raw("{\"value\":");
                j.str(&format!("{name} {}", self.rng.random_range(1..1000)));
                j.raw(",\"type\":\"string\"}");
            }
        }
    }

    /// A qualifier or reference snak (with hash) of property `p` holding a generated value.
    pub(super) fn aux_snak(&mut self, j: &mut J, p: &PropDef, name: &str, with_hash: bool) {
        j.raw("{\"snaktype\":\"value\",\"property\":");
        j.id(b'P', p.id.0);
        if with_hash {
            j.raw(",\"hash\":");
            j.hex(&mut self.rng, 40, false);
        }
        j.raw(",\"datavalue\":");
        if p.datatype == "wikibase-item" {
            let r = self.object_index(Role::Generic, u64::MAX);
            let q = self.m.item_id(r);
            self.item_value(j, q);
        } else {
            self.datavalue(j, p.datatype, name);
        }
        j.raw(",\"datatype\":");
        j.str(p.datatype);
        j.raw("}");
    }

    /// The curated properties among `ids` that exist in this dump.
    pub(super) fn curated(&self, ids: &[u64]) -> Vec<&'m PropDef> {
        let m: &'m Model = self.m;
        ids.iter()
            .filter_map(|&id| m.props.iter().take(CURATED.len()).find(|p| p.id.0 == id))
            .collect()
    }

    /// Snak groups `{"P580":[...],...}` followed by an order list under `order_key`.
    pub(super) fn snak_groups(
        &mut self,
        j: &mut J,
        defs: &[&PropDef],
        name: &str,
        order_key: &str,
        hashes: bool,
    ) {
        j.raw("{");
        for (i, p) in defs.iter().enumerate() {
            j.comma(i);
            j.key_id(b'P', p.id.0);
            j.raw("[");
            self.aux_snak(j, p, name, hashes);
            j.raw("]");
        }
        j.raw("},");
        j.key(order_key);
        j.raw("[");
        for (i, p) in defs.iter().enumerate() {
            j.comma(i);
            j.id(b'P', p.id.0);
        }
        j.raw("]");
    }

    pub(super) fn object_index(&mut self, role: Role, subject: u64) -> u64 {
        let n = self.m.n_items.max(1);
        let u: f64 = self.rng.random();
        let r = match role {
            Role::Class => ((n as f64).sqrt() * u * u) as u64,
            Role::Country => ((n.min(200)) as f64 * u * u) as u64,
            Role::Hierarchy if subject != u64::MAX && subject > 0 => {
                (subject as f64 * u.powf(1.5)) as u64
            }
            _ => (n as f64 * u * u * u) as u64,
        };
        r.min(n - 1)
    }
}

/// One statement of an item claim, planned before it is written.
#[derive(Clone, Copy)]
pub(super) enum Plan {
    /// An item of the dump (popularity rank).
    Item(u64),
    /// An item id that is not in the dump.
    Dangling(Qid),
    /// `somevalue` or `novalue`.
    Snak(&'static str),
    /// A generated value of the claim's datatype.
    Value,
}

impl Gen<'_> {
    /// The object of a generated item property: mostly a person, place or organisation of the subject's
    /// country, otherwise any item (heavy-tailed).
    pub(super) fn local_object(&mut self, home: u32) -> u64 {
        let w = &self.m.world;
        if home != u32::MAX && self.rng.random_bool(0.6) {
            let c = [Cls::Human, Cls::City, Cls::Org][self.rng.random_range(0..3)];
            if let Some(o) = w.draw(&mut self.rng, c, home, 1.0) {
                return u64::from(o);
            }
        }
        self.object_index(Role::Generic, u64::MAX)
    }
}

/// Generate one entity line at position `k` into `out` (no separator), recording the oracle in `t`.
pub(super) fn entity_line(m: &Model, k: u64, out: &mut Vec<u8>, t: &mut BlockTruth) {
    let mut rng = ChaCha8Rng::seed_from_u64(splitmix(m.cfg.seed ^ splitmix(k ^ 0xE11)));
    t.entities += 1;
    match m.kind(k) {
        Kind::Item(r) => {
            t.items += 1;
            let prof = m.item_profile(r);
            let mut g = Gen {
                m,
                legacy: prof.legacy,
                rng: ChaCha8Rng::seed_from_u64(rng.random()),
            };
            item_line(&mut g, r, prof, out, t);
        }
        Kind::Property(jx) => {
            t.properties += 1;
            let prof = m.prop_profile(jx);
            let mut g = Gen {
                m,
                legacy: prof.legacy,
                rng,
            };
            property_line(&mut g, jx, prof, out, t);
        }
        Kind::Lexeme(l) => {
            t.lexemes += 1;
            let mut g = Gen {
                m,
                legacy: false,
                rng,
            };
            lexeme_line(&mut g, l, out);
        }
    }
}

pub(super) fn terms(g: &mut Gen, j: &mut J, prof: LabelProfile, base: &str, popular: f64) {
    // Which languages get a label: the SWORD languages per the profile, `mul`, and a heavy-tailed number of
    // others (popular entities are labelled in many more languages).
    let extra = if prof.none {
        0
    } else {
        (heavy(&mut g.rng, 2.0 + 25.0 * popular, OTHER_LANGS.len() as u64) - 1) as usize
    };
    let mut langs: Vec<&str> = Vec::new();
    for (i, l) in SWORD_LANGS.iter().enumerate() {
        if prof.explicit & (1 << i) != 0 {
            langs.push(*l);
        }
    }
    langs.extend(OTHER_LANGS.iter().copied().take(extra));
    if prof.mul {
        langs.insert(0, "mul");
    }
    // Labels
    j.raw("\"labels\":");
    if langs.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, l) in langs.iter().enumerate() {
            j.comma(i);
            let text = if *l == "mul" {
                base.to_string()
            } else {
                script_name(l, base, &mut g.rng)
            };
            j.key(l);
            j.raw("{\"language\":");
            j.str(l);
            j.raw(",\"value\":");
            j.str(&text);
            j.raw("}");
        }
        j.raw("}");
    }
    // Descriptions: a subset of the label languages.
    j.raw(",\"descriptions\":");
    let descs: Vec<&str> = langs
        .iter()
        .copied()
        .filter(|l| *l != "mul" && g.rng.random_bool(0.6))
        .collect();
    if descs.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, l) in descs.iter().enumerate() {
            j.comma(i);
            let d = format!(
                "{} {}",
                ["entity", "village", "species", "person", "article", "work"]
                    [g.rng.random_range(0..6)],
                latin_name(&mut g.rng, 2).to_lowercase()
            );
            let d = script_name(l, &d, &mut g.rng);
            j.key(l);
            j.raw("{\"language\":");
            j.str(l);
            j.raw(",\"value\":");
            j.str(&d);
            j.raw("}");
        }
        j.raw("}");
    }
    // Aliases: a few languages with one to four aliases.
    j.raw(",\"aliases\":");
    let n_alias = if langs.is_empty() || g.rng.random_bool(0.6) {
        0
    } else {
        heavy(&mut g.rng, 1.5, langs.len() as u64) as usize
    };
    if n_alias == 0 {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, l) in langs.iter().take(n_alias).enumerate() {
            j.comma(i);
            j.key(l);
            j.raw("[");
            // Not `j.comma(a)`: that would make the draw a usize, another stream of random numbers.
            for a in 0..g.rng.random_range(1..5) {
                if a > 0 {
                    j.raw(",");
                }
                let name = latin_name(&mut g.rng, 2);
                let text = script_name(l, &name, &mut g.rng);
                j.raw("{\"language\":");
                j.str(l);
                j.raw(",\"value\":");
                j.str(&text);
                j.raw("}");
            }
            j.raw("]");
        }
        j.raw("}");
    }
}

pub(super) fn rank(g: &mut Gen) -> Rank {
    let u: f64 = g.rng.random();
    if u < 0.03 {
        Rank::Deprecated
    } else if u < 0.08 {
        Rank::Preferred
    } else {
        Rank::Normal
    }
}

/// The statement envelope around a mainsnak already written by `mainsnak`.
pub(super) fn statement(
    g: &mut Gen,
    j: &mut J,
    entity: &str,
    rank: Rank,
    name: &str,
    mainsnak: impl FnOnce(&mut Gen, &mut J),
) {
    j.raw("{\"mainsnak\":");
    mainsnak(g, j);
    j.raw(",\"type\":\"statement\"");
    let quals: Vec<u64> = if rank == Rank::Deprecated && g.rng.random_bool(0.5) {
        vec![2241]
    } else if g.rng.random_bool(0.15) {
        let pool = [580u64, 582, 585, 642, 1545];
        let n = g.rng.random_range(1..4);
        let start = g.rng.random_range(0..pool.len());
        (0..n).map(|i| pool[(start + i) % pool.len()]).collect()
    } else {
        Vec::new()
    };
    let quals = g.curated(&quals);
    if !quals.is_empty() {
        j.raw(",\"qualifiers\":");
        g.snak_groups(j, &quals, name, "qualifiers-order", true);
    }
    j.raw(",\"id\":");
    j.guid(&mut g.rng, entity);
    j.raw(",\"rank\":");
    j.str(rank.as_str());
    if g.rng.random_bool(0.4) {
        let n = heavy(&mut g.rng, 1.3, 4);
        let mut first = true;
        for _ in 0..n {
            let group: &[u64] = match g.rng.random_range(0..3) {
                0 => &[248, 813],
                1 => &[143],
                _ => &[854, 813],
            };
            let defs = g.curated(group);
            if defs.is_empty() {
                continue;
            }
            j.raw(if first { ",\"references\":[" } else { "," });
            first = false;
            j.raw("{\"hash\":");
            j.hex(&mut g.rng, 40, false);
            j.raw(",\"snaks\":");
            g.snak_groups(j, &defs, name, "snaks-order", false);
            j.raw("}");
        }
        if !first {
            j.raw("]");
        }
    }
    j.raw("}");
}

pub(super) fn snak_head(j: &mut J, snaktype: &str, p: &PropDef) {
    j.raw("{\"snaktype\":");
    j.str(snaktype);
    j.raw(",\"property\":");
    j.id(b'P', p.id.0);
}

pub(super) fn item_line(
    g: &mut Gen,
    r: u64,
    prof: LabelProfile,
    out: &mut Vec<u8>,
    t: &mut BlockTruth,
) {
    let m = g.m;
    let q = m.item_id(r);
    let qs = q.to_string();
    let popular = m.popularity(r);
    let words = g.rng.random_range(1..4);
    let mut base = latin_name(&mut g.rng, words);
    // The class items standing for the world's classes carry the class names.
    if m.world.cls[r as usize] == Cls::Class {
        if let Some(name) = CLASS_NAMES.get(m.world.pos[r as usize] as usize) {
            base = (*name).to_string();
        }
    }
    let mut j = J {
        out,
        legacy: prof.legacy,
    };
    if prof.labelled {
        t.labelled.push(EntityId::Item(q));
        if prof.mul_only() {
            t.mul_only += 1;
        }
    }
    j.raw("{\"type\":\"item\",\"id\":");
    j.str(&qs);
    j.raw(",");
    terms(g, &mut j, prof, &base, popular);

    // Claims: the item's schema (class, places, people, works, hierarchies, from the world model), then a
    // heavy-tailed number of other properties.
    let n_claims = heavy(&mut g.rng, m.cfg.mean_claims * (1.0 + 2.0 * popular), 400) as usize;
    let schema = schema_claims(g, r as u32);
    let mut chosen: Vec<usize> = schema.iter().map(|c| c.0).collect();
    let mut tries = 0;
    while chosen.len() < n_claims && tries < 4 * n_claims + 8 {
        tries += 1;
        let p = m.choose_prop(&mut g.rng);
        if m.props[p].role != Role::Meta && m.props[p].weight > 0.0 && !chosen.contains(&p) {
            chosen.push(p);
        }
    }
    let home = m.world.country[r as usize];
    // Statements for the falsity tiers, from a random stream of their own (`falsity::extras`).
    let (mut gx, extra) = falsity::extras(m, r, &chosen, prof.legacy);
    j.raw(",\"claims\":");
    if chosen.is_empty() && extra.claims.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (ci, &pi) in chosen.iter().enumerate() {
            let p = &m.props[pi];
            j.comma(ci);
            j.key_id(b'P', p.id.0);
            j.raw("[");
            // The statements of this claim: the schema's objects, or a heavy-tailed number of generated values.
            let mut plan: Vec<Plan> = match schema.get(ci) {
                Some((_, objs)) => objs.iter().map(|&o| Plan::Item(o as u64)).collect(),
                None => {
                    let n_st = if g.rng.random_bool(0.82) {
                        1
                    } else {
                        heavy(&mut g.rng, 2.5, 30)
                    };
                    (0..n_st)
                        .map(|_| {
                            if p.datatype == "wikibase-item" {
                                Plan::Item(g.local_object(home))
                            } else {
                                Plan::Value
                            }
                        })
                        .collect()
                }
            };
            // Quirks: now and then an unknown or no value, a duplicate (S, P, O), an item not in the dump.
            let st: f64 = g.rng.random();
            if st < 0.025 {
                plan.push(Plan::Snak("somevalue"));
            } else if st < 0.04 {
                plan.push(Plan::Snak("novalue"));
            }
            if p.datatype == "wikibase-item" {
                let u: f64 = g.rng.random();
                if u < 0.04 {
                    if let Some(&Plan::Item(o)) = plan.first() {
                        plan.push(Plan::Item(o));
                    }
                } else if u < 0.06 {
                    let rr = g.object_index(Role::Generic, r);
                    plan.push(Plan::Dangling(m.dangling_id(rr, g.rng.random_range(0..4))));
                }
            }
            for (written, step) in plan.into_iter().enumerate() {
                let rk = rank(g);
                let (snaktype, object) = match step {
                    Plan::Item(rr) => ("value", Some((m.item_id(rr), Some(rr)))),
                    Plan::Dangling(q) => ("value", Some((q, None))),
                    Plan::Snak(s) => (s, None),
                    Plan::Value => ("value", None),
                };
                j.comma(written);
                let name = &base;
                statement(g, &mut j, &qs, rk, name, |g, j| {
                    snak_head(j, snaktype, p);
                    if snaktype == "value" {
                        j.raw(",\"datavalue\":");
                        match object {
                            Some((o, _)) => g.item_value(j, o),
                            None => g.datavalue(j, p.datatype, name),
                        }
                    }
                    j.raw(",\"datatype\":");
                    j.str(p.datatype);
                    j.raw("}");
                });
                if let Some((o, oi)) = object {
                    record(m, t, q, prof.labelled, pi, o, oi, rk);
                }
                falsity::note(t, q, p, rk, object.map(|x| x.0), snaktype);
            }
            gx.extra_statements(&mut j, t, (q, prof.labelled), pi, extra.for_claim(pi), true);
            j.raw("]");
        }
        for (ci, (pi, sts)) in extra.claims.iter().enumerate() {
            if ci > 0 || !chosen.is_empty() {
                j.raw(",");
            }
            j.key_id(b'P', m.props[*pi].id.0);
            j.raw("[");
            gx.extra_statements(&mut j, t, (q, prof.labelled), *pi, sts, false);
            j.raw("]");
        }
        j.raw("}");
    }
    // Sitelinks: most items have none; popular ones many.
    j.raw(",\"sitelinks\":");
    let n_sl = if g.rng.random_bool(0.5 * (1.0 - popular)) {
        0
    } else {
        heavy(&mut g.rng, 2.0 + 40.0 * popular, SITES.len() as u64) as usize
    };
    if n_sl == 0 {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, site) in SITES.iter().take(n_sl).enumerate() {
            j.comma(i);
            j.key(site);
            j.raw("{\"site\":");
            j.str(site);
            j.raw(",\"title\":");
            let lang = site.trim_end_matches("wiki").trim_end_matches("wikiquote");
            let title = script_name(lang, &base, &mut g.rng);
            j.str(&title);
            j.raw(",\"badges\":[");
            if g.rng.random_bool(0.03) {
                j.str("Q17437796");
            }
            j.raw("]}");
        }
        j.raw("}");
    }
    if !prof.legacy {
        j.raw(",\"lastrevid\":");
        j.num(g.rng.random_range(100_000_000u64..2_300_000_000));
        j.raw(",\"modified\":");
        let date = format!(
            "20{:02}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            g.rng.random_range(13..26),
            g.rng.random_range(1..13),
            g.rng.random_range(1..29),
            g.rng.random_range(0..24),
            g.rng.random_range(0..60),
            g.rng.random_range(0..60)
        );
        j.str(&date);
    }
    j.raw("}");
}

pub(super) fn property_line(
    g: &mut Gen,
    jx: usize,
    prof: LabelProfile,
    out: &mut Vec<u8>,
    t: &mut BlockTruth,
) {
    let m = g.m;
    let p = m.props[jx].clone();
    let ps = p.id.to_string();
    if prof.labelled {
        t.labelled.push(EntityId::Property(p.id));
        if prof.mul_only() {
            t.mul_only += 1;
        }
    }
    let mut j = J {
        out,
        legacy: prof.legacy,
    };
    j.raw("{\"type\":\"property\",\"datatype\":");
    j.str(p.datatype);
    j.raw(",\"id\":");
    j.str(&ps);
    j.raw(",");
    let base = p.name.clone();
    terms(g, &mut j, prof, &base, 0.5);
    // Claims: P31 (transitive / symmetric / other classes), P1696 inverse, P2302 constraints, P1659.
    let mut groups: Vec<(u64, Vec<(Rank, Snak)>)> = Vec::new();
    let mut p31 = Vec::new();
    if p.transitive {
        p31.push((Rank::Normal, Snak::Item(Qid(18647515))));
    }
    if p.symmetric_p31 {
        p31.push((Rank::Normal, Snak::Item(Qid(18647518))));
    }
    if g.rng.random_bool(0.5) {
        let class = [18616576u64, 19847637, 18608871, 22964274][g.rng.random_range(0..4)];
        p31.push((Rank::Normal, Snak::Item(Qid(class))));
    }
    if !p31.is_empty() {
        groups.push((31, p31));
    }
    if !p.inverse.is_empty() {
        let snaks = p.inverse.iter().map(|&i| (Rank::Normal, Snak::Prop(i)));
        groups.push((1696, snaks.collect()));
    }
    // P2302: the constraints of `falsity::Plan` (the symmetric one among them), written in its place below.
    let cons = &m.falsity.constraints[jx];
    if !cons.is_empty() {
        groups.push((2302, Vec::new()));
    }
    if g.rng.random_bool(0.2) {
        let other = m.props[g.rng.random_range(0..m.props.len())].id;
        groups.push((1659, vec![(Rank::Normal, Snak::Prop(other))]));
    }
    j.raw(",\"claims\":");
    if groups.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (gi, (pid, snaks)) in groups.iter().enumerate() {
            j.comma(gi);
            if *pid == 2302 {
                j.key_id(b'P', 2302);
                j.raw("[");
                g.constraint_statements(&mut j, &ps, cons);
                j.raw("]");
                continue;
            }
            let def = PropDef {
                id: Pid(*pid),
                datatype: if matches!(snaks[0].1, Snak::Prop(_)) {
                    "wikibase-property"
                } else {
                    "wikibase-item"
                },
                ..p.clone()
            };
            j.key_id(b'P', def.id.0);
            j.raw("[");
            for (si, (rk, snak)) in snaks.iter().enumerate() {
                j.comma(si);
                let snak = *snak;
                statement(g, &mut j, &ps, *rk, &base, |g, j| {
                    snak_head(j, "value", &def);
                    j.raw(",\"datavalue\":");
                    match snak {
                        Snak::Item(q) => g.item_value(j, q),
                        Snak::Prop(pp) => g.prop_value(j, pp),
                    }
                    j.raw(",\"datatype\":");
                    j.str(def.datatype);
                    j.raw("}");
                });
            }
            j.raw("]");
        }
        j.raw("}");
    }
    if !prof.legacy {
        j.raw(",\"lastrevid\":");
        j.num(g.rng.random_range(100_000_000u64..2_300_000_000));
    }
    j.raw("}");
}

#[derive(Clone, Copy)]
pub(super) enum Snak {
    Item(Qid),
    Prop(Pid),
}

pub(super) fn lexeme_line(g: &mut Gen, l: u64, out: &mut Vec<u8>) {
    let id = format!("L{}", 1 + l * 3 + g.rng.random_range(0..3));
    let lemma = latin_name(&mut g.rng, 1).to_lowercase();
    let mut j = J { out, legacy: false };
    j.raw("{\"type\":\"lexeme\",\"id\":");
    j.str(&id);
    j.raw(",\"lemmas\":{\"en\":{\"language\":\"en\",\"value\":");
    j.str(&lemma);
    j.raw("}},\"lexicalCategory\":\"Q1084\",\"language\":\"Q1860\",\"claims\":{");
    // A lexeme claim with an item value: not an item → item triple (the subject is a lexeme).
    let o = g.m.item_id(g.object_index(Role::Generic, u64::MAX));
    j.raw("\"P5137\":[");
    let def = PropDef {
        id: Pid(5137),
        datatype: "wikibase-item",
        labelled: true,
        mul: false,
        transitive: false,
        symmetric_p31: false,
        symmetric_constraint: false,
        inverse: Vec::new(),
        role: Role::Meta,
        weight: 0.0,
        name: String::new(),
    };
    statement(g, &mut j, &id, Rank::Normal, &lemma, |g, j| {
        snak_head(j, "value", &def);
        j.raw(",\"datavalue\":");
        g.item_value(j, o);
        j.raw(",\"datatype\":\"wikibase-item\"}");
    });
    j.raw("]},\"forms\":[");
    for f in 1..=g.rng.random_range(1..4) {
        if f > 1 {
            j.raw(",");
        }
        j.raw("{\"id\":");
        j.str(&format!("{id}-F{f}"));
        j.raw(",\"representations\":{\"en\":{\"language\":\"en\",\"value\":");
        j.str(&format!(
            "{lemma}{}",
            ["", "s", "ed", "ing"][f as usize % 4]
        ));
        j.raw("}},\"grammaticalFeatures\":[\"Q110786\"],\"claims\":[]}");
    }
    j.raw("],\"senses\":[{\"id\":");
    j.str(&format!("{id}-S1"));
    j.raw(",\"glosses\":{\"en\":{\"language\":\"en\",\"value\":");
    j.str(&format!("meaning of {lemma}"));
    j.raw("}},\"claims\":[]}],\"lastrevid\":");
    j.num(g.rng.random_range(100_000_000u64..2_300_000_000));
    j.raw("}");
}

// ---------------------------------------------------------------------------------------------------------
// Blocks and output.

/// Lines `start..end`, joined by `,\n`, followed by `,\n` unless `end` is the last line.
pub(super) fn block_bytes(m: &Model, start: u64, end: u64) -> (Vec<u8>, BlockTruth) {
    let mut out = Vec::with_capacity(((end - start) * 2048) as usize);
    let mut t = BlockTruth::default();
    for k in start..end {
        entity_line(m, k, &mut out, &mut t);
        if k + 1 < m.cfg.entities {
            out.extend_from_slice(b",\n");
        }
    }
    (out, t)
}

/// Entity lines of the synthetic generator totalling at least `bytes` (for benchmarks of other stages), one
/// line per element, without separators.
pub fn bench_lines(bytes: usize, seed: u64) -> Vec<Vec<u8>> {
    // A model large enough for `bytes` (lines average well above 500 bytes).
    let cfg = Config {
        entities: (bytes as u64 / 500).max(1_000),
        seed,
        lexeme_share: 0.0,
        ..Config::default()
    };
    let m = Model::new(&cfg);
    let mut lines = Vec::new();
    let mut total = 0;
    let mut t = BlockTruth::default();
    let mut k = 0;
    while total < bytes && k < cfg.entities {
        let mut l = Vec::new();
        entity_line(&m, k, &mut l, &mut t);
        total += l.len();
        lines.push(l);
        k += 1;
    }
    lines
}
