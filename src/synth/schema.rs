//! The item → item claims an item states from the world model: its class, its places, its people, its works
//! and its hierarchies, each two-sided relation stated on the side(s) `World::states` picks.

use super::world::{heavy_index, Cls, World};
use super::*;

const NONE: u32 = u32::MAX;

/// (property index, object ranks) for item `r`, in claim order, without empty claims or missing properties.
pub(super) fn schema_claims(g: &mut Gen, r: u32) -> Vec<(usize, Vec<u32>)> {
    let m = g.m;
    let w: &World = &m.world;
    let c = w.cls[r as usize];
    let home = w.country[r as usize];
    let mut out: Vec<(u64, Vec<u32>)> = Vec::new();
    let mut put = |p: u64, objs: Vec<u32>| {
        let objs: Vec<u32> = objs.into_iter().filter(|&o| o != NONE && o != r).collect();
        if !objs.is_empty() {
            out.push((p, objs));
        }
    };
    // P31: the class item (now and then a more specific subclass).
    if g.rng.random_bool(0.95) {
        let mut class = w.class_item(c);
        let subs = w.subclasses(c);
        if let Some(a) = w.admin_class(c, home) {
            // Places are typed by country, as in Wikidata ("commune of France"), now and then by the base class.
            if g.rng.random_bool(0.95) {
                class = Some(a);
            }
        } else if c != Cls::Human && !subs.is_empty() && g.rng.random_bool(0.3) {
            // Humans are all "human"; works, organisations and the rest are often typed by a subclass.
            class = Some(subs[heavy_index(g.rng.random(), subs.len(), 2.0)]);
        }
        if c != Cls::Class {
            put(31, class.into_iter().collect());
        }
    }
    let p = |g: &mut Gen, x: f64| g.rng.random_bool(x);
    // Optional claims: more likely on popular items.
    let rich = w.richness(r);
    let q = |g: &mut Gen, x: f64| g.rng.random_bool((x * rich).min(0.98));
    // Optional single-object claims, in order: (property, base probability before richness, class of the
    // object, share of objects in the home country).
    let optional =
        |g: &mut Gen, put: &mut dyn FnMut(u64, Vec<u32>), claims: &[(u64, f64, Cls, f64)]| {
            for &(pid, x, k, local) in claims {
                if q(g, x) {
                    let v = pick(g, w, k, home, local);
                    put(pid, vec![v]);
                }
            }
        };
    let parent = w.parent[r as usize];
    match c {
        Cls::Human => {
            let others = &w.members[Cls::Other as usize];
            if !others.is_empty() && p(g, 0.9) {
                put(21, vec![others[g.rng.random_range(0..others.len().min(2))]]);
            }
            if p(g, 0.9) {
                let mut v = vec![if p(g, 0.93) {
                    home
                } else {
                    pick(g, w, Cls::Country, NONE, 0.0)
                }];
                if p(g, 0.05) {
                    v.push(pick(g, w, Cls::Country, NONE, 0.0));
                }
                put(27, v);
            }
            if p(g, 0.85) {
                let v = pick(g, w, Cls::City, home, 0.88);
                put(19, vec![v]);
            }
            if q(g, 0.45) {
                let v = pick(g, w, Cls::City, home, 0.8);
                put(20, vec![v]);
            }
            if p(g, 0.9) {
                let mut v = vec![pick(g, w, Cls::Occupation, NONE, 0.0)];
                if p(g, 0.3) {
                    v.push(pick(g, w, Cls::Occupation, NONE, 0.0));
                }
                put(106, v);
            }
            optional(
                g,
                &mut put,
                &[
                    (69, 0.45, Cls::University, 0.8),
                    (108, 0.4, Cls::Org, 0.75),
                    (102, 0.25, Cls::Party, 0.95),
                    (166, 0.2, Cls::Award, 0.7),
                ],
            );
            if home != NONE && q(g, 0.6) {
                let lang = w.language[w.pos[home as usize] as usize];
                let v = if p(g, 0.9) {
                    lang
                } else {
                    pick(g, w, Cls::Language, NONE, 0.0)
                };
                put(1412, vec![v]);
            }
            optional(
                g,
                &mut put,
                &[
                    (551, 0.3, Cls::City, 0.9),
                    (937, 0.3, Cls::City, 0.9),
                    (463, 0.15, Cls::Org, 0.85),
                ],
            );
            // Student of a teacher (P1066), stated by the student, by the teacher (P802 student), or both.
            let t = w.teacher[r as usize];
            if t != NONE && w.states(1066, r, t) {
                put(1066, vec![t]);
            }
            put(802, w.stated_by(1066, r, w.students.of(r).iter().copied()));
            if let Some(s) = w.spouse(r) {
                if w.states(26, r, s) {
                    put(26, vec![s]);
                }
            }
            if let Some((f, mo)) = w.parents(r) {
                if w.states(40, r, f) {
                    put(22, vec![f]);
                }
                if w.states(40, r, mo) {
                    put(25, vec![mo]);
                }
                put(3373, w.stated_by(3373, r, w.siblings(r)));
            }
            put(40, w.stated_by(40, r, w.kids(r).iter().copied()));
        }
        Cls::Country => {
            if home != NONE {
                let cp = w.pos[r as usize] as usize;
                put(30, vec![w.continent[cp]]);
                if let Some(&cap) = w.local(Cls::City, r).first() {
                    if w.states(36, r, cap) {
                        put(36, vec![cap]);
                    }
                }
                put(37, vec![w.language[cp]]);
            }
            put(47, w.stated_by(47, r, w.borders(r)));
            put(530, w.stated_by(530, r, w.diplomatic(r)));
            put(150, w.stated_by(131, r, w.children.of(r).iter().copied()));
        }
        Cls::Region | Cls::City => {
            if p(g, 0.9) {
                put(17, vec![home]);
            }
            if parent != NONE {
                let mut v = Vec::new();
                if w.states(131, r, parent) {
                    v.push(parent);
                }
                // Now and then the country too (redundant under transitivity, as in Wikidata).
                if c == Cls::City && p(g, 0.08) {
                    v.push(home);
                }
                put(131, v);
            }
            // Capitals, stated by the country or region (P36), by the city (P1376 capital of), or both.
            if c == Cls::Region {
                if let Some(&cap) = w.children.of(r).first() {
                    if w.states(36, r, cap) {
                        put(36, vec![cap]);
                    }
                }
            } else {
                let mut of = Vec::new();
                if home != NONE
                    && w.local(Cls::City, home).first() == Some(&r)
                    && w.states(36, r, home)
                {
                    of.push(home);
                }
                if parent != NONE
                    && w.children.of(parent).first() == Some(&r)
                    && w.states(36, r, parent)
                {
                    of.push(parent);
                }
                put(1376, of);
            }
            put(47, w.stated_by(47, r, w.borders(r)));
            if c == Cls::Region {
                put(150, w.stated_by(131, r, w.children.of(r).iter().copied()));
            }
        }
        Cls::Org | Cls::University | Cls::Party | Cls::Award => {
            if p(g, 0.9) {
                put(17, vec![home]);
            }
            if matches!(c, Cls::Org | Cls::University | Cls::Party) && q(g, 0.6) {
                let v = pick(g, w, Cls::City, home, 0.95);
                if c != Cls::Party {
                    put(131, vec![v]);
                }
                if c != Cls::University && q(g, 0.5) {
                    put(159, vec![v]);
                }
            }
            if c == Cls::Org {
                if parent != NONE && w.states(361, r, parent) {
                    put(361, vec![parent]);
                }
                put(527, w.stated_by(361, r, w.children.of(r).iter().copied()));
            }
        }
        Cls::Work => {
            if parent != NONE && p(g, 0.9) {
                put(50, vec![parent]);
            }
            if parent != NONE && p(g, 0.25) {
                let v = if p(g, 0.5) {
                    parent
                } else {
                    pick(g, w, Cls::Human, home, 0.9)
                };
                put(57, vec![v]);
            }
            if p(g, 0.6) {
                put(495, vec![home]);
            }
            let genres = &w.members[Cls::Genre as usize];
            if !genres.is_empty() && p(g, 0.7) {
                // A creator keeps to a genre or two.
                let k = splitmix(u64::from(parent) ^ g.rng.random_range(0..2u64)) as usize
                    % genres.len();
                let v = if p(g, 0.8) {
                    genres[k.min(genres.len() - 1)]
                } else {
                    pick(g, w, Cls::Genre, NONE, 0.0)
                };
                put(136, vec![v]);
            }
            if home != NONE && p(g, 0.5) {
                put(407, vec![w.language[w.pos[home as usize] as usize]]);
            }
            if q(g, 0.25) {
                // Cast members from the creator's country.
                let v: Vec<u32> = (0..g.rng.random_range(1..4))
                    .map(|_| pick(g, w, Cls::Human, home, 0.9))
                    .collect();
                put(161, v);
            }
            if q(g, 0.15) {
                let v = pick(g, w, Cls::City, home, 0.85);
                put(840, vec![v]);
            }
            if p(g, 0.25) {
                let k = if p(g, 0.5) { Cls::Human } else { Cls::City };
                let v = pick(g, w, k, home, 0.7);
                put(921, vec![v]);
            }
            if parent != NONE && p(g, 0.15) {
                // Part of an earlier work of the same creator (a series).
                let sib = w.children.of(parent);
                let here = sib.partition_point(|&x| x < r);
                if here > 0 {
                    put(361, vec![sib[g.rng.random_range(0..here)]]);
                }
            }
        }
        Cls::Class | Cls::Taxon | Cls::Genre | Cls::Language | Cls::Occupation => {
            let prop = if c == Cls::Taxon { 171 } else { 279 };
            if parent != NONE && p(g, 0.95) {
                put(prop, vec![parent]);
            }
        }
        Cls::Other => {
            if p(g, 0.3) {
                let v = pick(g, w, Cls::Country, NONE, 0.0);
                put(17, vec![v]);
            }
        }
        Cls::Continent => {}
    }
    out.into_iter()
        .filter_map(|(pid, objs)| m.prop_index(pid).map(|i| (i, objs)))
        .collect()
}

fn pick(g: &mut Gen, w: &World, c: Cls, country: u32, p_local: f64) -> u32 {
    w.draw(&mut g.rng, c, country, p_local).unwrap_or(NONE)
}
