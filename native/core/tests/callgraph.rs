//! Call-graph fixtures: one small repository per language under
//! `tests/fixtures/callgraph/<language>/`, with its expected edges in `expected.txt`.
//!
//! Each line of `expected.txt` is `<check> <from> -> <to> [<confidence>]`; symbols are
//! qualified names (`app.models.User.save`) that must name exactly one definition.
//! - `call A -> B resolved|inferred`: A calls B with that confidence.
//! - `inherit A -> B resolved|inferred`: class A extends or implements B.
//! - `ambiguous A -> name`: A calls `name`, which is reported unresolved with at least two
//!   candidates.
//! - `external A -> module`: A calls into `module`, outside the repository (unresolved).
//! - `unknown A -> name`: A calls `name`, which nothing defines (unresolved).
//! - `none A -> B`: no edge links A to B (not even as a candidate).

use std::fs;
use std::path::{Path, PathBuf};

use coderecall_core::graph::{Confidence, EdgeKind, Graph, GraphFile, Target};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/callgraph")
}

fn load(dir: &Path) -> Graph {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<GraphFile>) {
        for entry in fs::read_dir(dir).expect("fixture folder") {
            let path = entry.expect("fixture entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.file_name().is_some_and(|n| n != "expected.txt") {
                let rel = path
                    .strip_prefix(root)
                    .expect("inside the fixture")
                    .to_string_lossy()
                    .replace('\\', "/");
                let source = fs::read_to_string(&path).expect("fixture file");
                if let Some(file) = GraphFile::parse(&rel, &source) {
                    out.push(file);
                }
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    Graph::build(files)
}

fn one(graph: &Graph, symbol: &str, failures: &mut Vec<String>) -> Option<u32> {
    let found: Vec<u32> = graph
        .find(symbol)
        .into_iter()
        .filter(|&id| {
            // `find` also matches a suffix; a fixture names definitions in full.
            let path = graph.symbol_path(id);
            path == symbol || path.replace("::", ".") == symbol.replace("::", ".")
        })
        .collect();
    match found.as_slice() {
        [id] => Some(*id),
        [] => {
            failures.push(format!("no definition {symbol}"));
            None
        }
        many => {
            failures.push(format!("{symbol} names {} definitions", many.len()));
            None
        }
    }
}

fn describe(graph: &Graph, from: u32) -> String {
    graph
        .callees(from)
        .iter()
        .map(|&e| {
            let e = &graph.edges[e as usize];
            let to = match &e.target {
                Target::Node(t) => graph.symbol_path(*t),
                Target::Ambiguous(c) => format!("ambiguous({})", c.len()),
                Target::External(m) => format!("external({m})"),
                Target::Unknown => "unknown".into(),
            };
            format!(
                "  {}:{} {} {} -> {to} [{}]",
                e.kind.name(),
                e.line,
                e.callee,
                "",
                e.confidence.name()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_language(name: &str) -> Vec<String> {
    let dir = fixtures().join(name);
    let graph = load(&dir);
    let expected = fs::read_to_string(dir.join("expected.txt")).expect("expected.txt");
    let mut failures = Vec::new();
    for line in expected.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let check = words.next().expect("a check");
        let from = words.next().expect("a caller");
        assert_eq!(words.next(), Some("->"), "{name}: bad line {line}");
        let to = words.next().expect("a callee");
        let confidence = words.next();
        let Some(from_id) = one(&graph, from, &mut failures) else {
            continue;
        };
        let edges: Vec<_> = graph
            .callees(from_id)
            .into_iter()
            .map(|e| &graph.edges[e as usize])
            .collect();
        let ok = match check {
            "call" | "inherit" | "none" => {
                let Some(to_id) = one(&graph, to, &mut failures) else {
                    continue;
                };
                let kind = if check == "inherit" {
                    EdgeKind::Inherit
                } else {
                    EdgeKind::Call
                };
                let linked = |e: &&coderecall_core::graph::Edge| match &e.target {
                    Target::Node(t) => *t == to_id,
                    Target::Ambiguous(c) => c.contains(&to_id),
                    _ => false,
                };
                if check == "none" {
                    !edges.iter().any(linked)
                } else {
                    let want = match confidence {
                        Some("resolved") => Confidence::Resolved,
                        Some("inferred") => Confidence::Inferred,
                        other => panic!("{name}: bad confidence {other:?} in {line}"),
                    };
                    edges.iter().any(|e| {
                        e.kind == kind && e.target == Target::Node(to_id) && e.confidence == want
                    })
                }
            }
            "ambiguous" => edges.iter().any(|e| {
                e.callee.ends_with(to)
                    && matches!(&e.target, Target::Ambiguous(c) if c.len() >= 2)
                    && e.confidence == Confidence::Unresolved
            }),
            "external" => edges.iter().any(|e| {
                matches!(&e.target, Target::External(m) if m.contains(to))
                    && e.confidence == Confidence::Unresolved
            }),
            "unknown" => edges.iter().any(|e| {
                e.callee.ends_with(to)
                    && e.target == Target::Unknown
                    && e.confidence == Confidence::Unresolved
            }),
            other => panic!("{name}: unknown check {other} in {line}"),
        };
        if !ok {
            failures.push(format!("{line}\n{}", describe(&graph, from_id)));
        }
    }
    failures
}

fn assert_language(name: &str) {
    let failures = check_language(name);
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

macro_rules! languages {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                assert_language(stringify!($name));
            }
        )*
    };
}

languages!(
    python, javascript, typescript, rust, go, java, c, cpp, csharp, ruby, php, kotlin, swift,
    scala, bash, lua, zig,
);

/// The calls made by the definition named `from`: (callee as written, target's path or
/// `ambiguous N` or `unresolved`, confidence).
fn callees(graph: &Graph, from: &str) -> Vec<(String, String, Confidence)> {
    graph
        .callees(graph.find(from)[0])
        .into_iter()
        .map(|e| &graph.edges[e as usize])
        .map(|e| {
            let to = match &e.target {
                Target::Node(t) => graph.symbol_path(*t),
                Target::Ambiguous(c) => format!("ambiguous {}", c.len()),
                _ => "unresolved".to_owned(),
            };
            (e.callee.clone(), to, e.confidence)
        })
        .collect()
}

/// Each callee of `from` as written, with where it goes ([`callees`] without confidences).
fn targets(graph: &Graph, from: &str) -> Vec<(String, String)> {
    callees(graph, from)
        .into_iter()
        .map(|(callee, to, _)| (callee, to))
        .collect()
}

fn graph_of(files: &[(&str, &str)]) -> Graph {
    Graph::build(
        files
            .iter()
            .filter_map(|(path, source)| GraphFile::parse(path, source))
            .collect(),
    )
}

#[test]
fn find_puts_code_before_a_document_section_of_the_name() {
    let graph = graph_of(&[
        (
            "docs/a/guide.md",
            "# Guide\n\n## Environment\n\nHow to set it up.\n",
        ),
        (
            "docs/b/guide.md",
            "# Guide\n\n## Environment\n\nAnother copy.\n",
        ),
        (
            "src/Environment.php",
            "<?php\nnamespace App;\n\nclass Environment\n{\n    public function get() {}\n}\n",
        ),
    ]);
    let found = graph.find("Environment");
    assert!(found.len() >= 3, "{found:?}");
    assert_eq!(graph.path_of(found[0]), "src/Environment.php");
}

#[test]
fn find_puts_a_class_before_its_constructors() {
    let graph = graph_of(&[
        (
            "util/status.cc",
            "namespace db {\nStatus::Status(int code) : code_(code) {}\n}\n",
        ),
        (
            "include/db/status.h",
            "namespace db {\nclass Status {\n public:\n  Status(int code);\n  int code_;\n};\n}\n",
        ),
    ]);
    let found = graph.find("Status");
    assert!(found.len() >= 2, "{found:?}");
    assert_eq!(graph.symbol_path(found[0]), "include.db.status::db::Status");
}

#[test]
fn a_location_may_end_a_path_as_a_stack_trace_gives_it() {
    let body = "package org.x;\n\npublic class Parser {\n    void parse() {\n        run();\n    }\n\n    void run() {}\n}\n";
    let graph = graph_of(&[
        ("src/main/java/org/x/Parser.java", body),
        (
            "src/main/java/org/y/Parser.java",
            &body.replace("org.x", "org.y"),
        ),
        (
            "src/main/java/org/x/Lexer.java",
            &body.replace("Parser", "Lexer"),
        ),
    ]);
    let name = |found: Vec<u32>| {
        found
            .iter()
            .map(|&id| graph.symbol_path(id))
            .collect::<Vec<_>>()
    };
    assert_eq!(name(graph.find("Lexer.java:5")), ["org.x.Lexer.parse"]);
    assert_eq!(
        name(graph.find("org/x/Parser.java:8")),
        ["org.x.Parser.run"]
    );
    assert_eq!(
        name(graph.find("./src/main/java/org/y/Parser.java:4")),
        ["org.y.Parser.parse"]
    );
    // Two files end so: no place, and the text is looked up as a name (none here).
    assert!(graph.find("Parser.java:5").is_empty());
    assert!(
        graph.find("ser.java:5").is_empty(),
        "a path ends at a folder boundary"
    );
}

#[test]
fn a_typo_finds_the_names_spelled_like_it() {
    let graph = graph_of(&[(
        "src/values.go",
        "package values\n\nfunc GetValue() int { return 1 }\n\nfunc GetValues() int { return 2 }\n\nfunc SetValue() {}\n\nfunc jv_dump() {}\n",
    )]);
    assert_eq!(
        graph.similar_names("GetVaule", 3),
        ["GetValue", "GetValues", "SetValue"]
    );
    assert_eq!(graph.similar_names("values.jv_dupm", 3), ["jv_dump"]);
    assert_eq!(
        graph.similar_names("getvalue", 1),
        ["GetValues"],
        "not the name itself"
    );
    assert!(graph.similar_names("Completely", 3).is_empty());
}

#[test]
fn a_field_named_as_a_method_is_no_call_target() {
    // A builder's field and its setter share a name; `c.count(...)` calls the method, and
    // a struct's `len` field is not what `v.len()` calls.
    let graph = graph_of(&[
        (
            "src/counter.rs",
            "pub struct Counter {\n    count: u32,\n    len: usize,\n}\n\nimpl Counter {\n    pub fn count(&mut self, n: u32) -> &mut Self {\n        self.count = n;\n        self\n    }\n}\n",
        ),
        (
            "src/main.rs",
            "fn run(c: &mut Counter, v: Vec<u8>) -> usize {\n    c.count(3);\n    v.len()\n}\n",
        ),
    ]);
    assert_eq!(
        targets(&graph, "run"),
        [
            ("c.count".to_owned(), "counter::Counter::count".to_owned()),
            ("v.len".to_owned(), "unresolved".to_owned()),
        ]
    );
    // The field is still a definition its name finds.
    assert!(
        graph
            .find("Counter::len")
            .iter()
            .any(|&id| graph.symbol_path(id) == "counter::Counter::len")
    );
}

#[test]
fn a_standard_method_name_is_inferred_only_on_a_receiver_named_after_its_type() {
    // The repository's one `get` is MemoryStore's; `headers.get()` is a dictionary's.
    let graph = graph_of(&[
        (
            "app/memory.py",
            "class MemoryStore:\n    def get(self, ids):\n        return ids\n\n    def readable(self, ids):\n        return ids\n",
        ),
        (
            "app/http.py",
            "def parse(headers):\n    return headers.get('retry-after')\n\n\ndef load(store, ms, data, holder):\n    store.get(1)\n    ms.get(2)\n    holder._memory_store.get(3)\n    data.readable(4)\n",
        ),
    ]);
    assert_eq!(
        callees(&graph, "parse"),
        [(
            "headers.get".to_owned(),
            "unresolved".to_owned(),
            Confidence::Unresolved
        )]
    );
    let get = "app.memory.MemoryStore.get".to_owned();
    assert_eq!(
        callees(&graph, "load"),
        [
            ("store.get".to_owned(), get.clone(), Confidence::Inferred),
            ("ms.get".to_owned(), get.clone(), Confidence::Inferred),
            (
                "holder._memory_store.get".to_owned(),
                get,
                Confidence::Inferred
            ),
            (
                "data.readable".to_owned(),
                "app.memory.MemoryStore.readable".to_owned(),
                Confidence::Inferred
            ),
        ]
    );
}

#[test]
fn a_call_on_a_parameter_declared_with_a_type_goes_to_that_type() {
    // Two classes define `put`: without the parameter's type the call is ambiguous.
    let graph = graph_of(&[
        (
            "app/store.py",
            "class Store:\n    def put(self, k):\n        return k\n\n    def get(self, k):\n        return k\n",
        ),
        (
            "app/cache.py",
            "class Cache:\n    def put(self, k):\n        return k\n",
        ),
        (
            "app/use.py",
            "import httpx\nfrom typing import Optional\nfrom app.store import Store\n\n\ndef save(target: Store, headers: httpx.Headers, limit: int = 3, other=None):\n    target.put(1)\n    headers.get('x')\n    limit.bit_length()\n    other.put(2)\n\n    def inner():\n        target.get(3)\n\n    return inner\n\n\ndef later(a: \"Store\", b: Optional[Store] = None, c: Store | None = None):\n    a.put(1)\n    b.put(2)\n    c.put(3)\n",
        ),
    ]);
    let rows = |from: &str| targets(&graph, from);
    let external = |e: &&coderecall_core::graph::Edge| matches!(&e.target, Target::External(m) if m == "httpx");
    let save = graph.find("save")[0];
    assert!(
        graph
            .callees(save)
            .into_iter()
            .map(|e| &graph.edges[e as usize])
            .any(|e| e.callee == "headers.get" && external(&e))
    );
    assert_eq!(
        rows("save"),
        [
            ("target.put".to_owned(), "app.store.Store.put".to_owned()),
            ("headers.get".to_owned(), "unresolved".to_owned()),
            ("limit.bit_length".to_owned(), "unresolved".to_owned()),
            ("other.put".to_owned(), "ambiguous 2".to_owned()),
        ]
    );
    // Declared in the enclosing function.
    assert_eq!(
        callees(&graph, "inner"),
        [(
            "target.get".to_owned(),
            "app.store.Store.get".to_owned(),
            Confidence::Resolved
        )]
    );
    assert_eq!(callees(&graph, "save")[0].2, Confidence::Resolved);
    // A forward reference, `Optional[T]` and `T | None` name the type too.
    let put = "app.store.Store.put".to_owned();
    assert_eq!(
        rows("later"),
        [
            ("a.put".to_owned(), put.clone()),
            ("b.put".to_owned(), put.clone()),
            ("c.put".to_owned(), put),
        ]
    );
}

#[test]
fn typed_parameters_name_their_receivers_in_typescript_rust_java_and_go() {
    // Two types define `put` in each: only the parameter's declared type tells them apart.
    for (files, from, want) in [
        (
            vec![
                (
                    "src/store.ts",
                    "export class Store {\n  put(k: number) {\n    return k;\n  }\n}\n",
                ),
                (
                    "src/cache.ts",
                    "export class Cache {\n  put(k: number) {\n    return k;\n  }\n}\n",
                ),
                (
                    "src/use.ts",
                    "import { Store } from \"./store\";\n\nexport function save(s: Store | null, o?: Store) {\n  s.put(1);\n  o.put(2);\n}\n",
                ),
            ],
            "save",
            ("src.store.Store.put", Confidence::Resolved),
        ),
        (
            vec![
                (
                    "src/store.rs",
                    "pub struct Store;\n\nimpl Store {\n    pub fn put(&self, k: u32) -> u32 {\n        k\n    }\n}\n",
                ),
                (
                    "src/cache.rs",
                    "pub struct Cache;\n\nimpl Cache {\n    pub fn put(&self, k: u32) -> u32 {\n        k\n    }\n}\n",
                ),
                (
                    "src/main.rs",
                    "use crate::store::Store;\n\nfn save(s: &Store, m: &mut Store) {\n    s.put(1);\n    m.put(2);\n}\n",
                ),
            ],
            "save",
            ("store::Store::put", Confidence::Resolved),
        ),
        (
            vec![
                (
                    "src/Store.java",
                    "package shop;\n\npublic class Store {\n    public int put(int k) {\n        return k;\n    }\n}\n",
                ),
                (
                    "src/Cache.java",
                    "package shop;\n\npublic class Cache {\n    public int put(int k) {\n        return k;\n    }\n}\n",
                ),
                (
                    "src/Use.java",
                    "package shop;\n\nclass Use {\n    void save(Store s, final shop.Store t) {\n        s.put(1);\n        t.put(2);\n    }\n}\n",
                ),
            ],
            "save",
            // A class of another file of the same package (folder): in scope unimported.
            ("src.Store.put", Confidence::Resolved),
        ),
        (
            vec![
                (
                    "store/store.go",
                    "package store\n\ntype Store struct{}\n\nfunc (s *Store) Put(k int) int { return k }\n\ntype Cache struct{}\n\nfunc (c *Cache) Put(k int) int { return k }\n",
                ),
                (
                    "store/use.go",
                    "package store\n\nfunc save(st *Store, other Store) {\n\tst.Put(1)\n\tother.Put(2)\n}\n",
                ),
            ],
            "save",
            // A type of another file of the package (its folder) is in scope.
            ("store.Store.Put", Confidence::Resolved),
        ),
    ] {
        let graph = graph_of(&files);
        let rows: Vec<(String, Confidence)> = callees(&graph, from)
            .into_iter()
            .map(|(_, to, confidence)| (to, confidence))
            .collect();
        let want = (want.0.to_owned(), want.1);
        assert_eq!(rows, [want.clone(), want.clone()], "{want:?}");
    }
}

#[test]
fn variables_and_fields_built_or_declared_with_a_type_name_their_receivers() {
    // Two types define `put` in each: only what the variable or field was built from, or
    // declared as, tells them apart. `(from, callee) -> target` for every call checked.
    for (files, want) in [
        (
            vec![
                (
                    "app/store.py",
                    "class Store:\n    def put(self, k):\n        return k\n\n\nclass Cache:\n    def put(self, k):\n        return k\n",
                ),
                (
                    "app/use.py",
                    "from dataclasses import dataclass\nfrom app.store import Store\n\n\n@dataclass\nclass Holder:\n    kept: Store\n\n    def run(self):\n        self.kept.put(1)\n\n\nclass Service:\n    def __init__(self):\n        self.store = Store()\n        self.typed: Store = make()\n\n    def run(self):\n        self.store.put(1)\n        self.typed.put(2)\n        self.other.put(3)\n\n\ndef local():\n    s = Store()\n    t: Store = make()\n    rows = fetch()\n    s.put(1)\n    t.put(2)\n    rows.put(3)\n\n\nshared = Store()\n\n\ndef uses_global():\n    shared.put(1)\n",
                ),
            ],
            vec![
                ("Holder.run", "self.kept.put", "app.store.Store.put"),
                ("Service.run", "self.store.put", "app.store.Store.put"),
                ("Service.run", "self.typed.put", "app.store.Store.put"),
                ("Service.run", "self.other.put", "ambiguous 2"),
                ("local", "s.put", "app.store.Store.put"),
                ("local", "t.put", "app.store.Store.put"),
                ("local", "rows.put", "ambiguous 2"),
                ("uses_global", "shared.put", "app.store.Store.put"),
            ],
        ),
        (
            vec![
                (
                    "src/store.ts",
                    "export class Store {\n  put(k: number) {\n    return k;\n  }\n}\n\nexport class Cache {\n  put(k: number) {\n    return k;\n  }\n}\n",
                ),
                (
                    "src/use.ts",
                    "import { Store } from \"./store\";\n\nexport class Service {\n  private typed: Store;\n  private made = new Store();\n  private built;\n\n  constructor(private injected: Store) {\n    this.built = new Store();\n  }\n\n  run() {\n    this.typed.put(1);\n    this.made.put(2);\n    this.injected.put(3);\n    this.built.put(4);\n    this.other.put(5);\n  }\n}\n\nexport function local() {\n  const s = new Store();\n  let t: Store = make();\n  s.put(1);\n  t.put(2);\n}\n",
                ),
            ],
            vec![
                ("Service.run", "this.typed.put", "src.store.Store.put"),
                ("Service.run", "this.made.put", "src.store.Store.put"),
                ("Service.run", "this.injected.put", "src.store.Store.put"),
                ("Service.run", "this.built.put", "src.store.Store.put"),
                ("Service.run", "this.other.put", "ambiguous 2"),
                ("local", "s.put", "src.store.Store.put"),
                ("local", "t.put", "src.store.Store.put"),
            ],
        ),
        (
            vec![
                (
                    "src/store.js",
                    "export class Store {\n  put(k) {\n    return k;\n  }\n}\n\nexport class Cache {\n  put(k) {\n    return k;\n  }\n}\n",
                ),
                (
                    "src/use.js",
                    "import { Store } from \"./store.js\";\n\nexport class Service {\n  made = new Store();\n\n  constructor() {\n    this.built = new Store();\n  }\n\n  run() {\n    this.made.put(1);\n    this.built.put(2);\n    this.other.put(3);\n  }\n}\n\nexport function local() {\n  const s = new Store();\n  s.put(1);\n}\n",
                ),
            ],
            vec![
                ("Service.run", "this.made.put", "src.store.Store.put"),
                ("Service.run", "this.built.put", "src.store.Store.put"),
                ("Service.run", "this.other.put", "ambiguous 2"),
                ("local", "s.put", "src.store.Store.put"),
            ],
        ),
        (
            vec![
                (
                    "src/Store.cs",
                    "namespace Shop\n{\n    public class Store\n    {\n        public int Put(int k) { return k; }\n    }\n\n    public class Cache\n    {\n        public int Put(int k) { return k; }\n    }\n}\n",
                ),
                (
                    "src/Use.cs",
                    "namespace Shop\n{\n    class Use\n    {\n        private readonly Store _kept;\n        public Store Shared { get; }\n\n        void Run(Store p)\n        {\n            _kept.Put(1);\n            this._kept.Put(2);\n            Shared.Put(3);\n            p.Put(4);\n            Store s = Make();\n            s.Put(5);\n            var v = new Store();\n            v.Put(6);\n            var w = Make();\n            w.Put(7);\n        }\n    }\n}\n",
                ),
            ],
            vec![
                ("Use.Run", "_kept.Put", "src.Store.Shop.Store.Put"),
                ("Use.Run", "this._kept.Put", "src.Store.Shop.Store.Put"),
                ("Use.Run", "Shared.Put", "src.Store.Shop.Store.Put"),
                ("Use.Run", "p.Put", "src.Store.Shop.Store.Put"),
                ("Use.Run", "s.Put", "src.Store.Shop.Store.Put"),
                ("Use.Run", "v.Put", "src.Store.Shop.Store.Put"),
                ("Use.Run", "w.Put", "ambiguous 2"),
            ],
        ),
        (
            vec![
                (
                    "src/Store.kt",
                    "package shop\n\nclass Store {\n    fun put(k: Int): Int = k\n}\n\nclass Cache {\n    fun put(k: Int): Int = k\n}\n",
                ),
                (
                    "src/Use.kt",
                    "package shop\n\nclass Service(private val injected: Store) {\n    private val kept: Store = Store()\n    private val made = Store()\n\n    fun run() {\n        kept.put(1)\n        this.made.put(2)\n        injected.put(3)\n        other.put(4)\n    }\n}\n\nfun local(p: Store?) {\n    val s = Store()\n    val t: Store = make()\n    val u = make()\n    s.put(1)\n    t.put(2)\n    u.put(3)\n    p.put(4)\n}\n",
                ),
            ],
            vec![
                ("Service.run", "kept.put", "src.Store.put"),
                ("Service.run", "this.made.put", "src.Store.put"),
                ("Service.run", "injected.put", "src.Store.put"),
                // `put` is also a map's: a receiver of unknown type reaches neither.
                ("Service.run", "other.put", "unresolved"),
                ("local", "s.put", "src.Store.put"),
                ("local", "t.put", "src.Store.put"),
                ("local", "u.put", "unresolved"),
                ("local", "p.put", "src.Store.put"),
            ],
        ),
        (
            vec![
                (
                    "src/Store.php",
                    "<?php\nnamespace App;\n\nclass Store\n{\n    public function put($k) { return $k; }\n}\n\nclass Cache\n{\n    public function put($k) { return $k; }\n}\n",
                ),
                (
                    "src/Service.php",
                    "<?php\nnamespace App;\n\nclass Service\n{\n    private Store $kept;\n    private $built;\n\n    public function __construct(private Store $injected)\n    {\n        $this->built = new Store();\n    }\n\n    public function run(?Store $p)\n    {\n        $this->kept->put(1);\n        $this->injected->put(2);\n        $this->built->put(3);\n        $this->other->put(4);\n        $p->put(5);\n        $s = new Store();\n        $s->put(6);\n        $u = make();\n        $u->put(7);\n    }\n}\n",
                ),
            ],
            vec![
                ("Service.run", "$this->kept.put", "src.Store.Store.put"),
                ("Service.run", "$this->injected.put", "src.Store.Store.put"),
                ("Service.run", "$this->built.put", "src.Store.Store.put"),
                ("Service.run", "$this->other.put", "ambiguous 2"),
                ("Service.run", "$p.put", "src.Store.Store.put"),
                ("Service.run", "$s.put", "src.Store.Store.put"),
                ("Service.run", "$u.put", "ambiguous 2"),
            ],
        ),
        (
            vec![
                (
                    "lib/store.rb",
                    "class Store\n  def put(k)\n    k\n  end\nend\n\nclass Cache\n  def put(k)\n    k\n  end\nend\n",
                ),
                (
                    "lib/service.rb",
                    "require_relative \"store\"\n\nclass Service\n  def initialize\n    @store = Store.new\n  end\n\n  def run\n    @store.put(1)\n    @other.put(2)\n    s = Store.new\n    s.put(3)\n    u = make\n    u.put(4)\n  end\nend\n",
                ),
            ],
            vec![
                ("Service.run", "@store.put", "lib.store.Store.put"),
                ("Service.run", "@other.put", "ambiguous 2"),
                ("Service.run", "s.put", "lib.store.Store.put"),
                ("Service.run", "u.put", "ambiguous 2"),
            ],
        ),
        (
            vec![
                (
                    "src/shop/Store.java",
                    "package shop;\n\npublic class Store {\n    public int put(int k) {\n        return k;\n    }\n}\n",
                ),
                (
                    "src/shop/Cache.java",
                    "package shop;\n\npublic class Cache {\n    public int put(int k) {\n        return k;\n    }\n}\n",
                ),
                (
                    "src/app/Use.java",
                    "package app;\n\nimport shop.Store;\n\nclass Use {\n    private final Store kept;\n\n    void run() {\n        kept.put(1);\n        this.kept.put(2);\n        Store s = make();\n        s.put(3);\n        var v = new Store();\n        v.put(4);\n        var w = make();\n        w.put(5);\n    }\n}\n",
                ),
            ],
            vec![
                ("Use.run", "kept.put", "src.shop.Store.put"),
                ("Use.run", "this.kept.put", "src.shop.Store.put"),
                ("Use.run", "s.put", "src.shop.Store.put"),
                ("Use.run", "v.put", "src.shop.Store.put"),
                // `put` is also a map's: a receiver of unknown type reaches neither.
                ("Use.run", "w.put", "unresolved"),
            ],
        ),
        (
            vec![
                (
                    "store/store.go",
                    "package store\n\ntype Store struct{}\n\nfunc (s *Store) Put(k int) int { return k }\n\ntype Cache struct{}\n\nfunc (c *Cache) Put(k int) int { return k }\n",
                ),
                (
                    "store/service.go",
                    "package store\n\ntype Service struct {\n\tdb *Store\n}\n\nfunc (sv *Service) Run() {\n\tsv.db.Put(1)\n\tsv.other.Put(2)\n}\n\nfunc local() {\n\tvar a Store\n\tb := &Store{}\n\tc := make()\n\ta.Put(1)\n\tb.Put(2)\n\tc.Put(3)\n}\n",
                ),
            ],
            vec![
                ("Service.Run", "sv.db.Put", "store.Store.Put"),
                ("Service.Run", "sv.other.Put", "ambiguous 2"),
                ("local", "a.Put", "store.Store.Put"),
                ("local", "b.Put", "store.Store.Put"),
                ("local", "c.Put", "ambiguous 2"),
            ],
        ),
        (
            vec![(
                "src/store.rs",
                "pub struct Store;\n\nimpl Store {\n    pub fn new() -> Store {\n        Store\n    }\n\n    pub fn put(&self, k: u32) -> u32 {\n        k\n    }\n}\n\npub struct Cache;\n\nimpl Cache {\n    pub fn put(&self, k: u32) -> u32 {\n        k\n    }\n}\n\npub struct Service<'a> {\n    db: Store,\n    shared: &'a Store,\n}\n\nimpl Service<'_> {\n    fn run(&self) {\n        self.db.put(1);\n        self.other.put(2);\n        self.shared.put(3);\n    }\n}\n\nfn borrowed<'a>(s: &'a Store) {\n    s.put(1);\n}\n\nfn local() {\n    let a = Store::new();\n    let b: &Store = make();\n    let c = Store {};\n    let d = make();\n    a.put(1);\n    b.put(2);\n    c.put(3);\n    d.put(4);\n}\n",
            )],
            vec![
                ("Service::run", "self.db.put", "store::Store::put"),
                ("Service::run", "self.other.put", "ambiguous 2"),
                ("Service::run", "self.shared.put", "store::Store::put"),
                ("borrowed", "s.put", "store::Store::put"),
                ("local", "a.put", "store::Store::put"),
                ("local", "b.put", "store::Store::put"),
                ("local", "c.put", "store::Store::put"),
                ("local", "d.put", "ambiguous 2"),
            ],
        ),
    ] {
        let graph = graph_of(&files);
        for (from, callee, to) in want {
            let found: Vec<String> = callees(&graph, from)
                .into_iter()
                .filter(|(c, _, _)| c == callee)
                .map(|(_, t, _)| t)
                .collect();
            assert_eq!(found, [to], "{from}: {callee}");
        }
    }
}

#[test]
fn a_require_of_the_parent_folder_reaches_its_index_file() {
    // npm packages' examples load the package itself: `require('../')`, `require('..')`.
    let graph = graph_of(&[
        (
            "index.js",
            "class Command {\n  parse(argv) {\n    return argv;\n  }\n}\n\nmodule.exports = { Command };\n",
        ),
        (
            "lib/other.js",
            "class Parser {\n  parse(text) {\n    return text;\n  }\n}\n\nmodule.exports = { Parser };\n",
        ),
        (
            "examples/slash.js",
            "const { Command } = require('../');\n\nfunction main() {\n  const program = new Command();\n  program.parse(process.argv);\n}\n",
        ),
        (
            "lib/command.js",
            "class Runner {\n  start(argv) {\n    return argv;\n  }\n}\n\nclass Other {\n  start(argv) {\n    return argv;\n  }\n}\n\nmodule.exports = { Runner, Other };\n",
        ),
        (
            "lib/index.js",
            "const { Runner } = require('./command.js');\n\nmodule.exports = { Runner };\n",
        ),
        (
            "examples/reexported.js",
            "const { Runner } = require('../lib');\n\nfunction third() {\n  const runner = new Runner();\n  runner.start(process.argv);\n  runner.parse(process.argv);\n}\n",
        ),
        (
            "examples/bare.js",
            "const { Command } = require('..');\n\nfunction other() {\n  const program = new Command();\n  program.parse(process.argv);\n}\n",
        ),
    ]);
    for from in ["main", "other"] {
        let parse: Vec<(String, Confidence)> = callees(&graph, from)
            .into_iter()
            .filter(|(callee, _, _)| callee == "program.parse")
            .map(|(_, to, confidence)| (to, confidence))
            .collect();
        assert_eq!(
            parse,
            [("Command.parse".to_owned(), Confidence::Resolved)],
            "{from}"
        );
    }
    // A class the index file only passes on (`require('./command.js')` then
    // `module.exports`) is followed to where it is defined; a method it lacks is left to
    // the steps after (two `parse` in the repository: ambiguous), never unknown.
    let third: Vec<(String, String)> = targets(&graph, "third")
        .into_iter()
        .filter(|(callee, _)| callee.starts_with("runner."))
        .collect();
    assert_eq!(
        third,
        [
            (
                "runner.start".to_owned(),
                "lib.command.Runner.start".to_owned()
            ),
            ("runner.parse".to_owned(), "ambiguous 2".to_owned()),
        ]
    );
}

#[test]
fn a_name_a_package_passes_on_is_found_where_it_is_defined() {
    // `pkg/__init__.py` imports names from its modules; importers name the package.
    let graph = graph_of(&[
        (
            "pkg/__init__.py",
            "from .console import Console\nfrom .console import Console as Terminal\nfrom .util import *\n",
        ),
        (
            "pkg/console.py",
            "class Console:\n    def print(self, text):\n        return text\n",
        ),
        ("pkg/util.py", "def helper():\n    return 1\n"),
        (
            "other/printer.py",
            "class Printer:\n    def print(self, text):\n        return text\n",
        ),
        (
            "app.py",
            "from pkg import Console, Terminal, helper\n\n\ndef main():\n    c = Console()\n    c.print('x')\n    t = Terminal()\n    t.print('y')\n    helper()\n",
        ),
    ]);
    let rows: Vec<(String, String, Confidence)> = callees(&graph, "main");
    let console = "pkg.console.Console".to_owned();
    let print = "pkg.console.Console.print".to_owned();
    assert_eq!(
        rows,
        [
            ("Console".to_owned(), console.clone(), Confidence::Resolved),
            ("c.print".to_owned(), print.clone(), Confidence::Resolved),
            ("Terminal".to_owned(), console, Confidence::Resolved),
            ("t.print".to_owned(), print, Confidence::Resolved),
            (
                "helper".to_owned(),
                "pkg.util.helper".to_owned(),
                Confidence::Resolved
            ),
        ]
    );
}

#[test]
fn a_relative_module_the_repository_lacks_is_not_a_library() {
    let graph = graph_of(&[(
        "src/app.js",
        "const data = require('./data.json');\nconst missing = require('../gone');\nconst pad = require('left-pad');\n\nfunction main() {\n  data.load();\n  missing.run();\n  pad.left();\n}\n",
    )]);
    let main = graph.find("main")[0];
    let targets: Vec<(String, Target)> = graph
        .callees(main)
        .into_iter()
        .map(|e| &graph.edges[e as usize])
        .map(|e| (e.callee.clone(), e.target.clone()))
        .collect();
    assert_eq!(
        targets,
        [
            ("data.load".to_owned(), Target::Unknown),
            ("missing.run".to_owned(), Target::Unknown),
            (
                "pad.left".to_owned(),
                Target::External("left-pad".to_owned())
            ),
        ]
    );
}

#[test]
fn a_call_on_a_standard_type_leaves_the_repository() {
    // Each repository has one method of the name a standard type's call uses.
    let graph = graph_of(&[
        (
            "src/numbers.ts",
            "export class Numbers {\n  static min(a: number, b: number) { return a < b ? a : b; }\n}\n\nexport function clamp(x: number) {\n  return Math.min(x, 1) + Numbers.min(x, 2);\n}\n",
        ),
        (
            "src/main/java/app/Monitor.java",
            "package app;\n\nclass Monitor {\n  static void sleep(long ms) {}\n\n  void pause() {\n    Thread.sleep(10);\n  }\n}\n",
        ),
        (
            "src/graph.rs",
            "pub struct Graph;\n\nimpl Graph {\n    pub fn with_capacity(n: usize) -> Graph { Graph }\n    pub fn swap(&mut self) {}\n}\n\npub fn build(n: usize) -> Vec<u8> {\n    let mut a = 1;\n    let mut b = 2;\n    std::mem::swap(&mut a, &mut b);\n    Vec::with_capacity(n)\n}\n",
        ),
        (
            "app/frozen.py",
            "class Frozen:\n    def __setattr__(self, name, value):\n        raise AttributeError(name)\n\n\ndef thaw(obj, value):\n    object.__setattr__(obj, 'value', value)\n",
        ),
    ]);
    let external = |q: &str| {
        (
            q.to_owned(),
            "unresolved".to_owned(),
            Confidence::Unresolved,
        )
    };
    assert_eq!(
        callees(&graph, "clamp"),
        [
            external("Math.min"),
            (
                "Numbers.min".to_owned(),
                "src.numbers.Numbers.min".to_owned(),
                Confidence::Resolved
            ),
        ]
    );
    assert_eq!(callees(&graph, "pause"), [external("Thread.sleep")]);
    assert_eq!(
        callees(&graph, "build"),
        [external("std::mem.swap"), external("Vec.with_capacity")]
    );
    assert_eq!(callees(&graph, "thaw"), [external("object.__setattr__")]);
    let modules: Vec<String> = graph
        .callees(graph.find("build")[0])
        .into_iter()
        .map(|e| match &graph.edges[e as usize].target {
            Target::External(module) => module.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(modules, ["std::mem", "Vec"]);
}

#[test]
fn a_project_type_named_like_a_standard_one_keeps_its_methods() {
    // The project's own `Error` inherits `describe`: the call is the project's.
    let graph = graph_of(&[(
        "src/errors.ts",
        "export class Base {\n  static describe() { return 'base'; }\n}\n\nexport class Error extends Base {}\n\nexport function report() {\n  return Error.describe();\n}\n",
    )]);
    assert_eq!(
        callees(&graph, "report"),
        [(
            "Error.describe".to_owned(),
            "src.errors.Base.describe".to_owned(),
            Confidence::Inferred
        )]
    );
}

#[test]
fn a_standard_method_name_shared_by_several_types_needs_a_receiver_named_after_one() {
    // Two types of the repository have `len`: `rows.len()` is a vector's, not "one of two",
    // and `table.len()` may be any table's; `term_table.len()` may be one of the two.
    let graph = graph_of(&[(
        "src/lib.rs",
        "pub struct TermTable;\n\nimpl TermTable {\n    pub fn len(&self) -> usize { 0 }\n}\n\npub struct Queue;\n\nimpl Queue {\n    pub fn len(&self) -> usize { 0 }\n}\n\npub fn count() -> usize {\n    let rows = load();\n    let table = load();\n    let term_table = load();\n    rows.len() + table.len() + term_table.len()\n}\n",
    )]);
    let unresolved = |callee: &str| {
        (
            callee.to_owned(),
            "unresolved".to_owned(),
            Confidence::Unresolved,
        )
    };
    assert_eq!(
        callees(&graph, "count")
            .into_iter()
            .filter(|(callee, ..)| callee.ends_with(".len"))
            .collect::<Vec<_>>(),
        [
            unresolved("rows.len"),
            unresolved("table.len"),
            (
                "term_table.len".to_owned(),
                "ambiguous 2".to_owned(),
                Confidence::Unresolved
            ),
        ]
    );
}

#[test]
fn a_rust_parameter_of_a_type_with_lifetimes_names_its_receiver() {
    let graph = graph_of(&[
        (
            "src/lines.rs",
            "pub struct Lines<'a> {\n    text: &'a str,\n}\n\nimpl<'a> Lines<'a> {\n    pub fn len(&self) -> usize {\n        self.text.len()\n    }\n}\n",
        ),
        (
            "src/queue.rs",
            "pub struct Queue;\n\nimpl Queue {\n    pub fn len(&self) -> usize {\n        0\n    }\n}\n",
        ),
        (
            "src/sections.rs",
            "use crate::lines::Lines;\n\npub fn sections(lines: &Lines<'_>, other: &Parser<'_, T>) -> usize {\n    lines.len() + other.len()\n}\n",
        ),
    ]);
    assert_eq!(
        targets(&graph, "sections"),
        [
            ("lines.len".to_owned(), "lines::Lines::len".to_owned()),
            ("other.len".to_owned(), "unresolved".to_owned()),
        ]
    );
}
