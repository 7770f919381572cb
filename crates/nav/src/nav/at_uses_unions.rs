//! Unit tests of TypeScript receivers typed by a union of named types or an object type alias,
//! narrowed by a check (`x instanceof C`, a user type guard), or typed by nothing — asked at a
//! use as `--from PATH:LINE:COL` asks it, definitions and references both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::Resolution;
use super::at_uses::{places, repo};

#[test]
fn receivers_typed_by_a_union_answer_the_member_of_each_type() {
    let f = "src/adm.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class ObservableValue { get(): number { return 1 } }\n", // 1
            "export class ComputedValue { get(): number { return 2 } }\n",   // 2
            "export class Other { get(): number { return 3 } }\n",           // 3
            "type Entry = ObservableValue | ComputedValue\n",                // 4
            "export class Adm {\n",                                          // 5
            "  values_ = new Map<string, ObservableValue | ComputedValue>()\n", // 6
            "  read(k: string, v: ObservableValue | ComputedValue | undefined, e: Entry): number {\n", // 7
            "    v!.get()\n",                          // 8
            "    e.get()\n",                           // 9
            "    const found = this.values_.get(k)\n", // 10
            "    found!.get()\n",                      // 11
            "    return this.values_.get(k)!.get()\n", // 12
            "  }\n",                                   // 13
            "}\n",                                     // 14
        ),
    )]);
    let both = [format!("{f}:1"), format!("{f}:2")];
    for line in [8, 9, 11] {
        assert_eq!(r.def(f, line, "get"), both, "line {line}");
    }
    // The second `get` of `this.values_.get(k)!.get()`.
    let at = r.at(f, 12, "get", 1);
    let defs = r.index.definition_at(Some("get"), Some(&at)).unwrap();
    assert_eq!(places(&defs), both);
    assert_eq!(
        r.refs(f, 1, "get"),
        [8, 9, 11, 12].map(|l| format!("{f}:{l}"))
    );
    assert_eq!(r.refs(f, 3, "get"), Vec::<String>::new());
}

#[test]
fn checks_and_type_guards_narrow_a_receiver_where_they_hold() {
    let f = "src/write.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class ObservableValue { set(v: number): void {} }\n", // 1
            "export class ComputedValue { set(v: number): void {} }\n",   // 2
            "export function isComputed(x: unknown): x is ComputedValue {\n", // 3
            "  return x instanceof ComputedValue\n",                      // 4
            "}\n",                                                        // 5
            "type Value = ObservableValue | ComputedValue\n",             // 6
            "export function write(o: Value, p: Value, q: any): void {\n", // 7
            "  if (o instanceof ComputedValue) {\n",                      // 8
            "    o.set(1)\n",                                             // 9
            "  }\n",                                                      // 10
            "  o.set(2)\n",                                               // 11
            "  if (isComputed(q)) {\n",                                   // 12
            "    q.set(3)\n",                                             // 13
            "  }\n",                                                      // 14
            "  if (!(p instanceof ObservableValue)) return\n",            // 15
            "  p.set(4)\n",                                               // 16
            "}\n",                                                        // 17
        ),
    )]);
    let (observable, computed) = (format!("{f}:1"), format!("{f}:2"));
    assert_eq!(r.def(f, 9, "set"), std::slice::from_ref(&computed));
    assert_eq!(r.def(f, 11, "set"), [observable.clone(), computed.clone()]);
    assert_eq!(r.def(f, 13, "set"), std::slice::from_ref(&computed));
    assert_eq!(r.def(f, 16, "set"), std::slice::from_ref(&observable));
    assert_eq!(r.refs(f, 1, "set"), [11, 16].map(|l| format!("{f}:{l}")));
    assert_eq!(r.refs(f, 2, "set"), [9, 11, 13].map(|l| format!("{f}:{l}")));
}

#[test]
fn references_at_an_untyped_receiver_are_the_uses_through_that_receiver() {
    let f = "src/api.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Query { initiate(): void {} }\n",    // 1
            "export class Mutation { initiate(): void {} }\n", // 2
            "export function start(api: any, name: string, q: Query): void {\n", // 3
            "  const endpoint = api.endpoints[name]\n",        // 4
            "  endpoint.initiate()\n",                         // 5
            "  q.initiate()\n",                                // 6
            "  endpoint\n",                                    // 7
            "    .initiate()\n",                               // 8
            "  api.other.initiate()\n",                        // 9
            "}\n",                                             // 10
            "export function other(endpoint: any): void {\n",  // 11
            "  endpoint.initiate()\n",                         // 12
            "}\n",                                             // 13
        ),
    )]);
    let at = r.at(f, 5, "initiate", 0);
    let refs = r.index.references_at(Some("initiate"), Some(&at)).unwrap();
    let lines: Vec<(u32, Resolution)> = refs.iter().map(|l| (l.line, l.resolution)).collect();
    // Only the uses through the same receiver are certainly the same member; none is labelled
    // resolved, since which type's member it is stays unknown.
    assert_eq!(
        lines,
        [(5, Resolution::Candidate), (8, Resolution::Candidate)]
    );
    // A typed receiver's references stay those of its type, and no use through a receiver
    // nothing types is listed among them, not even as a candidate.
    let at = r.at(f, 1, "initiate", 0);
    let refs = r.index.references_at(Some("initiate"), Some(&at)).unwrap();
    let lines: Vec<(u32, Resolution)> = refs.iter().map(|l| (l.line, l.resolution)).collect();
    assert_eq!(lines, [(6, Resolution::Resolved)]);
}

#[test]
fn receivers_typed_by_an_object_type_alias_have_its_members() {
    let f = "src/annotation.ts";
    let r = repo(&[(
        f,
        concat!(
            "export type Annotation = {\n", // 1
            "  make_(key: string): void\n", // 2
            "}\n",                          // 3
            "export class Adm {\n",         // 4
            "  make_(key: string, annotation: Annotation | boolean): void {\n", // 5
            "    annotation.make_(key)\n",  // 6
            "  }\n",                        // 7
            "}\n",                          // 8
            "export function other(a: Annotation): void {\n", // 9
            "  a.make_(\"k\")\n",           // 10
            "}\n",                          // 11
        ),
    )]);
    assert_eq!(r.def(f, 6, "make_"), [format!("{f}:2")]);
    assert_eq!(r.refs(f, 2, "make_"), [6, 10].map(|l| format!("{f}:{l}")));
}

#[test]
fn a_call_in_a_condition_that_is_no_type_guard_keeps_the_declared_type() {
    let f = "src/run.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Query { run(): void {} }\n", // 1
            "export class Other { run(): void {} }\n", // 2
            "function shouldRun(q: Query): boolean { return true }\n", // 3
            "export function start(q: Query, e: Query): void {\n", // 4
            "  if (shouldRun(q)) {\n",                 // 5
            "    q.run()\n",                           // 6
            "  }\n",                                   // 7
            "  if (e instanceof Error) {\n",           // 8
            "    e.run()\n",                           // 9
            "  }\n",                                   // 10
            "}\n",                                     // 11
        ),
    )]);
    assert_eq!(r.def(f, 6, "run"), [format!("{f}:1")]);
    assert_eq!(r.def(f, 9, "run"), [format!("{f}:1")]);
}
