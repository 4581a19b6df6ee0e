//! The item → item claims an item states from the world model: its class, its places, its people, its works
//! and its hierarchies, each two-sided relation stated on the side(s) `World::sides` picks.

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
            if q(g, 0.45) {
                let v = pick(g, w, Cls::University, home, 0.8);
                put(69, vec![v]);
            }
            if q(g, 0.4) {
                let v = pick(g, w, Cls::Org, home, 0.75);
                put(108, vec![v]);
            }
            if q(g, 0.25) {
                let v = pick(g, w, Cls::Party, home, 0.95);
                put(102, vec![v]);
            }
            if q(g, 0.2) {
                let v = pick(g, w, Cls::Award, home, 0.7);
                put(166, vec![v]);
            }
            if home != NONE && q(g, 0.6) {
                let lang = w.language[w.pos[home as usize] as usize];
                let v = if p(g, 0.9) {
                    lang
                } else {
                    pick(g, w, Cls::Language, NONE, 0.0)
                };
                put(1412, vec![v]);
            }
            if q(g, 0.3) {
                let v = pick(g, w, Cls::City, home, 0.9);
                put(551, vec![v]);
            }
            if q(g, 0.3) {
                let v = pick(g, w, Cls::City, home, 0.9);
                put(937, vec![v]);
            }
            if q(g, 0.15) {
                let v = pick(g, w, Cls::Org, home, 0.85);
                put(463, vec![v]);
            }
            // Student of a teacher (P1066), stated by the student, by the teacher (P802 student), or both.
            let t = w.teacher[r as usize];
            if t != NONE && w.sides(1066, r, t).0 {
                put(1066, vec![t]);
            }
            let st: Vec<u32> = w.students[r as usize]
                .iter()
                .copied()
                .filter(|&x| w.sides(1066, x, r).1)
                .collect();
            put(802, st);
            if let Some(s) = w.spouse(r) {
                if w.sides(26, r, s).0 {
                    put(26, vec![s]);
                }
            }
            if let Some((f, mo)) = w.parents(r) {
                if w.sides(40, f, r).1 {
                    put(22, vec![f]);
                }
                if w.sides(40, mo, r).1 {
                    put(25, vec![mo]);
                }
                let sib: Vec<u32> = w
                    .siblings(r)
                    .into_iter()
                    .filter(|&x| w.sides(3373, r, x).0)
                    .collect();
                put(3373, sib);
            }
            let kids: Vec<u32> = w
                .kids(r)
                .iter()
                .copied()
                .filter(|&k| w.sides(40, r, k).0)
                .collect();
            put(40, kids);
        }
        Cls::Country => {
            if home != NONE {
                let cp = w.pos[r as usize] as usize;
                put(30, vec![w.continent[cp]]);
                if let Some(&cap) = w.local(Cls::City, r).first() {
                    if w.sides(36, r, cap).0 {
                        put(36, vec![cap]);
                    }
                }
                put(37, vec![w.language[cp]]);
            }
            let b: Vec<u32> = w
                .borders(r)
                .into_iter()
                .filter(|&x| w.sides(47, r, x).0)
                .collect();
            put(47, b);
            let d: Vec<u32> = w
                .diplomatic(r)
                .into_iter()
                .filter(|&x| w.sides(530, r, x).0)
                .collect();
            put(530, d);
            let regions: Vec<u32> = w.children[r as usize]
                .iter()
                .copied()
                .filter(|&x| w.sides(131, x, r).1)
                .collect();
            put(150, regions);
        }
        Cls::Region | Cls::City => {
            if p(g, 0.9) {
                put(17, vec![home]);
            }
            if parent != NONE {
                let mut v = Vec::new();
                if w.sides(131, r, parent).0 {
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
                if let Some(&cap) = w.children[r as usize].first() {
                    if w.sides(36, r, cap).0 {
                        put(36, vec![cap]);
                    }
                }
            } else {
                let mut of = Vec::new();
                if home != NONE
                    && w.local(Cls::City, home).first() == Some(&r)
                    && w.sides(36, home, r).1
                {
                    of.push(home);
                }
                if parent != NONE
                    && w.children[parent as usize].first() == Some(&r)
                    && w.sides(36, parent, r).1
                {
                    of.push(parent);
                }
                put(1376, of);
            }
            {
                let b: Vec<u32> = w
                    .borders(r)
                    .into_iter()
                    .filter(|&x| w.sides(47, r, x).0)
                    .collect();
                put(47, b);
            }
            if c == Cls::Region {
                let cities: Vec<u32> = w.children[r as usize]
                    .iter()
                    .copied()
                    .filter(|&x| w.sides(131, x, r).1)
                    .collect();
                put(150, cities);
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
                if parent != NONE && w.sides(361, r, parent).0 {
                    put(361, vec![parent]);
                }
                let parts: Vec<u32> = w.children[r as usize]
                    .iter()
                    .copied()
                    .filter(|&x| w.sides(361, x, r).1)
                    .collect();
                put(527, parts);
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
                let sib = &w.children[parent as usize];
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
