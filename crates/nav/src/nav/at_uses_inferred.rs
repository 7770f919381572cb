//! Unit tests of TypeScript receivers typed by what the compiler infers rather than by an
//! annotation: collections built by `new Map<K, V>()`, generic functions whose return type is
//! bound by an argument, object literals a factory returns, unions — asked at a use as
//! `--from PATH:LINE:COL` asks it, definitions and references both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::at_uses::repo;

#[test]
fn collections_built_with_type_arguments_type_their_elements() {
    let f = "src/store.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Entry { load(): void {} }\n",     // 1
            "export class Other { load(): void {} }\n",     // 2
            "export class Store {\n",                       // 3
            "  #entries = new Map<string, Entry>()\n",      // 4
            "  all = new Set<Entry>()\n",                   // 5
            "  read(k: string): void {\n",                  // 6
            "    this.#entries.get(k)!.load()\n",           // 7
            "    const list = new Array<Entry>()\n",        // 8
            "    list.forEach((e) => e.load())\n",          // 9
            "    this.all.forEach((e) => {\n",              // 10
            "      e.load()\n",                             // 11
            "    })\n",                                     // 12
            "    const byKey = new Map<string, Entry>()\n", // 13
            "    const found = byKey.get(k)\n",             // 14
            "    found!.load()\n",                          // 15
            "  }\n",                                        // 16
            "}\n",                                          // 17
        ),
    )]);
    for line in [7, 9, 11, 15] {
        assert_eq!(r.def(f, line, "load"), [format!("{f}:1")], "line {line}");
    }
    assert_eq!(
        r.refs(f, 1, "load"),
        [7, 9, 11, 15].map(|l| format!("{f}:{l}"))
    );
}

#[test]
fn generic_functions_return_what_their_arguments_bind() {
    let f = "src/observers.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Observer { destroy(): void {} }\n", // 1
            "export class Other { destroy(): void {} }\n",    // 2
            "function difference<T>(a: Array<T>, b: Array<T>): Array<T> {\n", // 3
            "  return a.filter((x) => !b.includes(x))\n",     // 4
            "}\n",                                            // 5
            "function first<T>(items: T[]): T {\n",           // 6
            "  return items[0]!\n",                           // 7
            "}\n",                                            // 8
            "export function update(prev: Observer[], next: Array<Observer>): void {\n", // 9
            "  difference(prev, next).forEach((o) => {\n",    // 10
            "    o.destroy()\n",                              // 11
            "  })\n",                                         // 12
            "  const gone = difference(next, prev)\n",        // 13
            "  gone.forEach((o) => o.destroy())\n",           // 14
            "  first(prev).destroy()\n",                      // 15
            "  const one = first(next)\n",                    // 16
            "  one.destroy()\n",                              // 17
            "}\n",                                            // 18
        ),
    )]);
    for line in [11, 14, 15, 17] {
        assert_eq!(r.def(f, line, "destroy"), [format!("{f}:1")], "line {line}");
    }
    assert_eq!(
        r.refs(f, 1, "destroy"),
        [11, 14, 15, 17].map(|l| format!("{f}:{l}"))
    );
}

#[test]
fn object_literals_a_factory_returns_hold_the_methods_called() {
    let (n, u) = ("src/notify.ts", "src/use.ts");
    let r = repo(&[
        (
            n,
            concat!(
                "export function createNotifyManager() {\n",   // 1
                "  let queue: Array<() => void> = []\n",       // 2
                "  const flush = (): void => {}\n",            // 3
                "  return {\n",                                // 4
                "    batch: <T>(callback: () => T): T => {\n", // 5
                "      return callback()\n",                   // 6
                "    },\n",                                    // 7
                "    schedule(cb: () => void): void {\n",      // 8
                "      queue.push(cb)\n",                      // 9
                "    },\n",                                    // 10
                "  } as const\n",                              // 11
                "}\n",                                         // 12
                "export const notifyManager = createNotifyManager()\n", // 13
                "export class Other {\n",                      // 14
                "  batch(): void {}\n",                        // 15
                "  schedule(): void {}\n",                     // 16
                "}\n",                                         // 17
                "export const makeStore = () => ({\n",         // 18
                "  schedule: (): void => {},\n",               // 19
                "})\n",                                        // 20
            ),
        ),
        (
            u,
            concat!(
                "import { notifyManager, createNotifyManager, makeStore } from './notify'\n", // 1
                "export function run(): void {\n",                                            // 2
                "  notifyManager.batch(() => 1)\n",                                           // 3
                "  const m = createNotifyManager()\n",                                        // 4
                "  m.schedule(() => {})\n",                                                   // 5
                "  createNotifyManager().batch(() => 2)\n",                                   // 6
                "  makeStore().schedule()\n",                                                 // 7
                "}\n",                                                                        // 8
            ),
        ),
    ]);
    assert_eq!(r.def(u, 3, "batch"), [format!("{n}:5")]);
    assert_eq!(r.def(u, 5, "schedule"), [format!("{n}:8")]);
    assert_eq!(r.def(u, 6, "batch"), [format!("{n}:5")]);
    assert_eq!(r.def(u, 7, "schedule"), [format!("{n}:19")]);
    assert_eq!(r.refs(n, 5, "batch"), [format!("{u}:3"), format!("{u}:6")]);
    assert_eq!(r.refs(n, 15, "batch"), Vec::<String>::new());
}

#[test]
fn collections_of_typed_receivers_and_optional_maps_type_their_values() {
    let f = "src/observable.ts";
    let r = repo(&[(
        f,
        concat!(
            "export interface IDerivation { onBecomeStale_(): void }\n", // 1
            "export class Computed { onBecomeStale_(): void {} }\n",     // 2
            "export class Value { get(): number { return 1 } }\n",       // 3
            "export class Other { get(): number { return 2 } }\n",       // 4
            "export interface IObservable {\n",                          // 5
            "  observers_: Set<IDerivation>\n",                          // 6
            "}\n",                                                       // 7
            "export function propagate(observable: IObservable): void {\n", // 8
            "  observable.observers_.forEach((d) => {\n",                // 9
            "    d.onBecomeStale_()\n",                                  // 10
            "  })\n",                                                    // 11
            "}\n",                                                       // 12
            "export class Keys {\n",                                     // 13
            "  private pending_: undefined | Map<string, Value>\n",      // 14
            "  has(key: string): number {\n",                            // 15
            "    const entry = this.pending_!.get(key)\n",               // 16
            "    let made = undefined\n",                                // 17
            "    made = new Value()\n",                                  // 18
            "    made.get()\n",                                          // 19
            "    return entry!.get()\n",                                 // 20
            "  }\n",                                                     // 21
            "}\n",                                                       // 22
        ),
    )]);
    assert_eq!(r.def(f, 10, "onBecomeStale_"), [format!("{f}:1")]);
    assert_eq!(r.def(f, 20, "get"), [format!("{f}:3")]);
    assert_eq!(r.def(f, 19, "get"), [format!("{f}:3")]);
    assert_eq!(r.refs(f, 3, "get"), [format!("{f}:19"), format!("{f}:20")]);
}

#[test]
fn aliases_of_declared_collections_and_unions_with_primitives_are_typed() {
    let f = "src/queries.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class QueryObserver { destroy(): void {} }\n", // 1
            "export class Other { destroy(): void {} }\n",         // 2
            "export class Annotation { make_(): void {} }\n",      // 3
            "export class Maker { make_(): void {} }\n",           // 4
            "function difference<T>(a: Array<T>, b: Array<T>): Array<T> {\n", // 5
            "  return a\n",                                        // 6
            "}\n",                                                 // 7
            "export class Queries {\n",                            // 8
            "  #observers: Array<QueryObserver> = []\n",           // 9
            "  update(next: string[], annotation: Annotation | boolean): void {\n", // 10
            "    const prev = this.#observers\n",                  // 11
            "    difference(prev, next).forEach((observer) => {\n", // 12
            "      observer.destroy()\n",                          // 13
            "    })\n",                                            // 14
            "    annotation.make_()\n",                            // 15
            "  }\n",                                               // 16
            "}\n",                                                 // 17
        ),
    )]);
    assert_eq!(r.def(f, 13, "destroy"), [format!("{f}:1")]);
    assert_eq!(r.def(f, 15, "make_"), [format!("{f}:3")]);
    assert_eq!(r.refs(f, 3, "make_"), [format!("{f}:15")]);
}

#[test]
fn references_at_an_unbound_use_are_those_of_its_best_candidate() {
    let f = "src/run.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Query { initiate(): void {} }\n",    // 1
            "export class Mutation { initiate(): void {} }\n", // 2
            "export function start(q: Query, m: Mutation, x: any): void {\n", // 3
            "  q.initiate()\n",                                // 4
            "  m.initiate()\n",                                // 5
            "  x.initiate()\n",                                // 6
            "}\n",                                             // 7
        ),
    )]);
    let at = r.at(f, 6, "initiate", 0);
    let defs = r.index.definition_at(Some("initiate"), Some(&at)).unwrap();
    let top = format!("{}:{}", defs[0].path, defs[0].line);
    let refs = r.index.references_at(Some("initiate"), Some(&at)).unwrap();
    let lines: Vec<u32> = refs.iter().map(|l| l.line).collect();
    // The other candidate's bound use is another symbol's reference.
    let other = if top.ends_with(":1") { 5 } else { 4 };
    assert!(!lines.contains(&other), "{top}: {lines:?}");
    assert!(lines.contains(&6), "{lines:?}");
}

#[test]
fn locals_cast_with_as_hold_the_type_cast_to() {
    let f = "src/router.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Procedure { call(): void {} }\n", // 1
            "export class Router { call(): void {} }\n",    // 2
            "export function invoke(defs: any, path: string): void {\n", // 3
            "  const procedure = defs[path] as\n",          // 4
            "    | Procedure\n",                            // 5
            "    | undefined\n",                            // 6
            "  procedure!.call()\n",                        // 7
            "}\n",                                          // 8
        ),
    )]);
    assert_eq!(r.def(f, 7, "call"), [format!("{f}:1")]);
    assert_eq!(r.refs(f, 1, "call"), [format!("{f}:7")]);
}

#[test]
fn a_declared_local_keeps_its_type_through_later_assignments() {
    let (c, t) = ("src/cache.ts", "src/cache.test.ts");
    let r = repo(&[
        (
            c,
            concat!(
                "export class QueryCache { subscribe(): void {} }\n", // 1
                "export class Other { subscribe(): void {} }\n",      // 2
                "export function make(): any { return null }\n",      // 3
            ),
        ),
        (
            t,
            concat!(
                "import { QueryCache, make } from './cache'\n", // 1
                "describe('cache', () => {\n",                  // 2
                "  let queryCache: QueryCache\n",               // 3
                "  beforeEach(() => {\n",                       // 4
                "    queryCache = make()\n",                    // 5
                "  })\n",                                       // 6
                "  test('subscribes', () => {\n",               // 7
                "    queryCache.subscribe()\n",                 // 8
                "  })\n",                                       // 9
                "})\n",                                         // 10
            ),
        ),
    ]);
    assert_eq!(r.def(t, 8, "subscribe"), [format!("{c}:1")]);
    assert_eq!(r.refs(c, 1, "subscribe"), [format!("{t}:8")]);
}

#[test]
fn constructor_parameter_properties_are_members_of_the_class() {
    let f = "src/reaction.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class Reaction {\n",                // 1
            "  constructor(\n",                         // 2
            "    public name_: string,\n",              // 3
            "    private onInvalidate_: () => void,\n", // 4
            "  ) {}\n",                                 // 5
            "  schedule_(): void {\n",                  // 6
            "    this.onInvalidate_()\n",               // 7
            "  }\n",                                    // 8
            "}\n",                                      // 9
        ),
    )]);
    assert_eq!(r.def(f, 7, "onInvalidate_"), [format!("{f}:4")]);
    assert_eq!(r.refs(f, 4, "onInvalidate_"), [format!("{f}:7")]);
}

#[test]
fn exported_var_declarations_are_definitions() {
    let f = "src/set.ts";
    let r = repo(&[(
        f,
        concat!(
            "export function check(other: any): boolean {\n", // 1
            "  return isObservableSet(other)\n",              // 2
            "}\n",                                            // 3
            "export var isObservableSet = make(\"ObservableSet\") as (\n", // 4
            "  thing: any\n",                                 // 5
            ") => boolean\n",                                 // 6
            "export var reset = () => {}\n",                  // 7
        ),
    )]);
    assert_eq!(r.def(f, 2, "isObservableSet"), [format!("{f}:4")]);
    assert_eq!(r.refs(f, 7, "reset"), Vec::<String>::new());
}

#[test]
fn callback_parameters_take_the_type_the_callee_declares() {
    let (b, s) = ("src/builders.ts", "src/slice.ts");
    let r = repo(&[
        (
            b,
            concat!(
                "export interface ActionReducerMapBuilder<S> {\n", // 1
                "  addCase(type: string): ActionReducerMapBuilder<S>\n", // 2
                "}\n",                                             // 3
                "export class Context { addCase(): void {} }\n",   // 4
                "export function createReducer<S>(\n",             // 5
                "  initialState: S,\n",                            // 6
                "  mapOrBuilderCallback: (builder: ActionReducerMapBuilder<S>) => void,\n", // 7
                "): void {}\n",                                    // 8
            ),
        ),
        (
            s,
            concat!(
                "import { createReducer } from './builders'\n", // 1
                "export function build(): void {\n",            // 2
                "  createReducer(0, (builder) => {\n",          // 3
                "    builder.addCase('a')\n",                   // 4
                "  })\n",                                       // 5
                "  createReducer(0, builder => builder.addCase('b'))\n", // 6
                "}\n",                                          // 7
            ),
        ),
    ]);
    assert_eq!(r.def(s, 4, "addCase"), [format!("{b}:2")]);
    assert_eq!(r.def(s, 6, "addCase"), [format!("{b}:2")]);
    assert_eq!(r.refs(b, 4, "addCase"), Vec::<String>::new());
}

#[test]
fn arrays_built_by_map_hold_what_the_callback_returns() {
    let f = "src/queries.ts";
    let r = repo(&[(
        f,
        concat!(
            "export class QueryObserver { getCurrentResult(): number { return 1 } }\n", // 1
            "export class Other { getCurrentResult(): number { return 2 } }\n",         // 2
            "interface Match { observer: QueryObserver }\n",                            // 3
            "export class Queries {\n",                                                 // 4
            "  update(matches: Array<Match>): void {\n",                                // 5
            "    const observers = matches.map((match) => match.observer)\n",           // 6
            "    observers.map((observer) =>\n",                                        // 7
            "      observer.getCurrentResult(),\n",                                     // 8
            "    )\n",                                                                  // 9
            "    observers.forEach((o) => o.getCurrentResult())\n",                     // 10
            "  }\n",                                                                    // 11
            "}\n",                                                                      // 12
        ),
    )]);
    assert_eq!(r.def(f, 8, "getCurrentResult"), [format!("{f}:1")]);
    assert_eq!(r.def(f, 10, "getCurrentResult"), [format!("{f}:1")]);
    assert_eq!(
        r.refs(f, 1, "getCurrentResult"),
        [8, 10].map(|l| format!("{f}:{l}"))
    );
}
