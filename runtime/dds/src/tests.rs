//! Unit tests of parsing, checking, expanding, counting and comparing.

use super::*;
use proptest::prelude::*;

fn opts() -> ParseOptions {
    ParseOptions::default()
}

fn raw() -> ParseOptions {
    ParseOptions {
        vars: Vec::new(),
        substitute: false,
    }
}

/// A topology with the given declarations and main content.
fn doc(decls: &str, main: &str) -> String {
    format!("<topology name=\"t\">\n{decls}\n<main name=\"main\">\n{main}\n</main>\n</topology>\n")
}

const TASK: &str = "<decltask name=\"a\"><exe>run-a</exe></decltask>";

/// The diagnostics of `text` as `(code, spanned text)`.
fn diags(text: &str, options: &ParseOptions) -> Vec<(&'static str, String)> {
    let (_, d) = parse(text, options);
    d.iter()
        .map(|d| (d.code, text.get(d.range()).unwrap_or("?").to_string()))
        .collect()
}

fn has(text: &str, code: &str, spanned: &str) {
    let d = diags(text, &opts());
    assert!(
        d.iter().any(|(c, s)| *c == code && s == spanned),
        "expected {code} at `{spanned}` in {d:?}\n{text}"
    );
}

#[test]
fn a_small_topology_parses() {
    let text = doc(
        "<var name=\"v\" value=\"x\"/>\
         <property name=\"p\" scope=\"collection\"/>\
         <asset name=\"as\" type=\"inline\" visibility=\"global\" value=\"data\"/>\
         <declrequirement name=\"r\" type=\"hostname\" value=\"h.*\"/>\
         <decltrigger name=\"tr\" condition=\"TaskCrashed\" action=\"RestartTask\" arg=\"3\"/>\
         <decltask name=\"a\"><exe reachable=\"false\">run ${v} %taskIndex%</exe><env>setup</env>\
           <requirements><name>r</name></requirements>\
           <properties><name access=\"write\">p</name></properties>\
           <triggers><name>tr</name></triggers><assets><name>as</name></assets></decltask>\
         <declcollection name=\"c\"><tasks><name n=\"2\">a</name></tasks></declcollection>",
        "<task>a</task><collection>c</collection><group name=\"g\" n=\"3\"><task>a</task></group>",
    );
    let (t, d) = parse(&text, &opts());
    assert!(d.is_empty(), "{d:?}");
    let t = t.unwrap();
    assert_eq!(t.name, "t");
    assert_eq!(t.tasks[0].exe.text, "run x %taskIndex%");
    assert!(!t.tasks[0].exe.reachable);
    assert_eq!(t.tasks[0].env.as_ref().unwrap().text, "setup");
    assert!(t.tasks[0].env.as_ref().unwrap().reachable);
    assert_eq!(t.tasks[0].properties, vec![(0, Access::Write)]);
    assert_eq!(t.properties[0].scope, PropertyScope::Collection);
    assert_eq!(t.assets[0].visibility, AssetVisibility::Global);
    assert_eq!(t.requirements[0].kind, RequirementKind::HostName);
    assert_eq!(t.triggers[0].restarts, 3);
    assert_eq!(t.collections[0].tasks, vec![0, 0]);
    assert_eq!(t.main.groups[0].n, 3);
    assert_eq!(t.main.tasks, vec![0]);
    // The declaration's span is the element in the original text.
    assert!(text[t.tasks[0].span.clone()].starts_with("<decltask name=\"a\">"));
}

#[test]
fn xml_errors_have_a_position() {
    let text = "<topology name=\"t\">\n  <decltask>\n</topology>";
    let d = diags(text, &opts());
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].0, "dds-xml");
    let (_, diags) = parse(text, &opts());
    let (line, _) = pnet_diagnostics::line_col(text, diags[0].range().start);
    assert_eq!(line, 3);
    let (_, d) = parse_bytes(b"<topology \xff/>", &opts());
    assert_eq!(d[0].code, "dds-xml");
    assert_eq!(d[0].range(), 10..11);
}

#[test]
fn the_root_must_be_topology() {
    has("<net name=\"x\"/>", "dds-root", "<net name=\"x\"/>");
}

#[test]
fn schema_order_and_multiplicity() {
    let text = doc(
        &format!("{TASK}<property name=\"p\"/>"),
        "<group name=\"g\" n=\"1\"/><task>a</task>",
    );
    has(&text, "dds-schema-order", "<property name=\"p\"/>");
    has(&text, "dds-schema-order", "<task>");
    let text = doc(
        "<decltask name=\"a\"><exe>x</exe><exe>y</exe></decltask>",
        "",
    );
    has(&text, "dds-too-many", "<exe>");
    let text = format!("{}<main name=\"m2\"/>", doc(TASK, ""));
    assert!(diags(&text, &opts()).iter().any(|(c, _)| *c == "dds-xml"));
    let text = doc(TASK, "").replace("</topology>", "<main name=\"m2\"/></topology>");
    has(&text, "dds-too-many", "<main name=\"m2\"/>");
}

#[test]
fn missing_elements() {
    has(
        "<topology name=\"t\"><main name=\"m\"/></topology>",
        "dds-missing-element",
        "<topology name=\"t\">",
    );
    has(
        "<topology name=\"t\">\n<decltask name=\"a\"><exe>x</exe></decltask></topology>",
        "dds-missing-element",
        "<topology name=\"t\">",
    );
    has(
        &doc("<decltask name=\"a\"><env>x</env></decltask>", ""),
        "dds-missing-element",
        "<decltask name=\"a\">",
    );
    has(
        &doc(
            &format!("{TASK}<declcollection name=\"c\"><tasks></tasks></declcollection>"),
            "",
        ),
        "dds-missing-element",
        "<tasks>",
    );
}

#[test]
fn unknown_elements_attributes_and_text() {
    let text = doc(
        &format!("{TASK}<port name=\"p\"/>"),
        "<task foo=\"1\">a</task>",
    );
    has(&text, "dds-unknown-element", "<port name=\"p\"/>");
    has(&text, "dds-unknown-attribute", "foo=\"1\"");
    let text = doc("<decltask name=\"a\">stray<exe>x<b/></exe></decltask>", "");
    has(&text, "dds-unexpected-text", "stray");
    has(&text, "dds-unknown-element", "<b/>");
    // xsi attributes are allowed.
    let text = "<topology xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
                xsi:noNamespaceSchemaLocation=\"topology.xsd\" name=\"t\">\
                <decltask name=\"a\"><exe>x</exe></decltask><main name=\"m\"/></topology>";
    assert_eq!(diags(text, &opts()), vec![]);
}

#[test]
fn nested_groups_are_rejected() {
    let text = doc(
        TASK,
        "<group name=\"g\" n=\"2\"><group name=\"h\" n=\"2\"><task>a</task></group></group>",
    );
    has(&text, "dds-nested-group", "<group name=\"h\" n=\"2\">");
}

#[test]
fn missing_attributes_and_bad_values() {
    let text = doc(
        "<property/><decltask name=\"a\"><exe reachable=\"maybe\">x</exe>\
         <properties><name>a</name></properties></decltask>",
        "<group name=\"g\"/>",
    );
    has(&text, "dds-missing-attribute", "<property/>");
    has(&text, "dds-missing-attribute", "<group name=\"g\"/>");
    has(&text, "dds-missing-attribute", "<name>");
    has(&text, "dds-bad-value", "maybe");
    let text = doc(
        &format!(
            "<property name=\"p\" scope=\"world\"/>\
             <declrequirement name=\"r\" type=\"cpu\" value=\"1\"/>{TASK}"
        ),
        "<group name=\"g\" n=\"0\"><task>a</task></group><group name=\"h\" n=\"-2\"/>",
    );
    has(&text, "dds-bad-value", "world");
    has(&text, "dds-bad-value", "cpu");
    has(&text, "dds-bad-value", "0");
    has(&text, "dds-bad-value", "-2");
    let text = doc(
        "<asset name=\"s\" type=\"inline\" visibility=\"task\" value=\"\"/>\
         <decltask name=\"a\"><exe></exe></decltask>",
        "",
    );
    has(&text, "dds-empty-value", "");
    has(&text, "dds-empty-value", "<exe>");
}

#[test]
fn names_follow_the_pattern() {
    let long = "x".repeat(129);
    let text = doc(
        &format!(
            "<decltask name=\"a b\"><exe>x</exe></decltask><decltask name=\"{long}\"><exe>x</exe></decltask>"
        ),
        "<task>a/b</task>",
    );
    has(&text, "dds-bad-name", "a b");
    has(&text, "dds-bad-name", &long);
    has(&text, "dds-bad-name", "a/b");
    let ok = "x".repeat(128);
    let text = doc(
        &format!(
            "<decltask name=\"{ok}\"><exe>x</exe></decltask><decltask name=\"#@~_-9\"><exe>x</exe></decltask>"
        ),
        "",
    );
    assert_eq!(diags(&text, &opts()), vec![]);
}

#[test]
fn references_must_be_declared_once() {
    let text = doc(
        &format!(
            "{TASK}<decltask name=\"b\"><exe>1</exe></decltask><decltask name=\"b\"><exe>2</exe></decltask>"
        ),
        "<task>a</task><task>b</task><task>zzz</task><collection>c</collection>",
    );
    has(&text, "dds-undeclared", "zzz");
    has(&text, "dds-undeclared", "c");
    has(&text, "dds-duplicate", "b");
    // A duplicate nobody uses is a warning only.
    let text = doc(
        &format!(
            "{TASK}<decltask name=\"b\"><exe>1</exe></decltask><decltask name=\"b\"><exe>2</exe></decltask>"
        ),
        "<task>a</task>",
    );
    let (t, d) = parse(&text, &opts());
    assert!(t.is_some());
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "dds-duplicate-unused");
    assert_eq!(d[0].severity, Severity::Warning);
    // Group names are unique within main.
    let text = doc(
        TASK,
        "<group name=\"g\" n=\"1\"><task>a</task></group><group name=\"g\" n=\"2\"><task>a</task></group>",
    );
    has(&text, "dds-duplicate", "g");
}

#[test]
fn repeated_references_are_warnings() {
    let text = doc(
        "<property name=\"p\"/><decltrigger name=\"t\" condition=\"TaskCrashed\" action=\"RestartTask\" arg=\"1\"/>\
         <decltask name=\"a\"><exe>x</exe><properties><name access=\"read\">p</name>\
         <name access=\"write\">p</name></properties><triggers><name>t</name><name>t</name></triggers></decltask>",
        "<task>a</task>",
    );
    let (t, d) = parse(&text, &opts());
    let t = t.unwrap();
    assert_eq!(t.tasks[0].properties, vec![(0, Access::ReadWrite)]);
    assert_eq!(t.tasks[0].triggers, vec![0]);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|d| d.code == "dds-repeated-reference"));
}

#[test]
fn trigger_args_and_requirement_values() {
    let text = doc(
        &format!(
            "<declrequirement name=\"m\" type=\"maxinstances\" value=\"many\"/>\
             <declrequirement name=\"g\" type=\"gpu\" value=\"x2\"/>\
             <decltrigger name=\"t\" condition=\"TaskCrashed\" action=\"RestartTask\" arg=\"five\"/>{TASK}"
        ),
        "",
    );
    has(&text, "dds-bad-requirement", "many");
    has(&text, "dds-bad-requirement", "x2");
    has(&text, "dds-bad-trigger-arg", "five");
}

#[test]
fn variables_are_substituted_with_spans_in_the_original() {
    let text = doc(
        &format!("<var name=\"n\" value=\"4\"/><var name=\"bad\" value=\"a b\"/>{TASK}"),
        "<group name=\"g\" n=\"${n}\"><task>a</task></group>",
    );
    let (t, d) = parse(&text, &opts());
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(t.unwrap().main.groups[0].n, 4);
    // --var overrides
    let o = ParseOptions {
        vars: vec![("n".into(), "7".into())],
        substitute: true,
    };
    assert_eq!(parse(&text, &o).0.unwrap().main.groups[0].n, 7);
    // Raw: `${n}` is not a number.
    let d = diags(&text, &raw());
    assert_eq!(d, vec![("dds-bad-value", "${n}".to_string())]);
    // An error inside a substituted value points at the reference.
    let text = doc(
        &format!("<var name=\"bad\" value=\"a b\"/>{TASK}"),
        "<group name=\"${bad}\" n=\"1\"><task>a</task></group>",
    );
    has(&text, "dds-bad-name", "${bad}");
    // Values are escaped: `<` in a value stays text.
    let text = doc(
        "<var name=\"v\" value=\"a &lt; b &amp; &quot;c&quot;\"/>\
         <decltask name=\"a\"><exe>echo '${v}'</exe></decltask>",
        "<task>a</task>",
    );
    let t = parse(&text, &opts()).0.unwrap();
    assert_eq!(t.tasks[0].exe.text, "echo 'a < b & \"c\"'");
    // Unknown names stay for the shell.
    let text = doc(
        "<decltask name=\"a\"><exe>echo ${HOME}</exe></decltask>",
        "",
    );
    assert_eq!(
        parse(&text, &opts()).0.unwrap().tasks[0].exe.text,
        "echo ${HOME}"
    );
}

#[test]
fn variable_cycles_and_duplicates() {
    let text = doc(
        &format!("<var name=\"a\" value=\"${{b}}\"/><var name=\"b\" value=\"${{a}}\"/>{TASK}"),
        "",
    );
    let d = diags(&text, &opts());
    assert!(d.iter().any(|(c, _)| *c == "dds-var-cycle"), "{d:?}");
    let text = doc(
        &format!("<var name=\"a\" value=\"1\"/><var name=\"a\" value=\"2\"/>{TASK}"),
        "<group name=\"g\" n=\"${a}\"><task>a</task></group>",
    );
    has(&text, "dds-duplicate", "a");
}

#[test]
fn huge_topologies_are_refused_without_allocating() {
    let text = doc(
        &format!(
            "{TASK}<declcollection name=\"c\"><tasks><name n=\"4294967295\">a</name><name n=\"4294967295\">a</name></tasks></declcollection>"
        ),
        "<group name=\"g\" n=\"4294967295\"><task>a</task><collection>c</collection></group>",
    );
    let (t, d) = parse(&text, &opts());
    assert!(t.is_none());
    assert!(d.iter().any(|d| d.code == "dds-too-large"), "{d:?}");
}

/// DDS's `topology_test_7.xml`.
const TEST7: &str = r#"<topology name="myTopology">
  <decltask name="task1"><exe>task1.exe</exe></decltask>
  <decltask name="task2"><exe>task2.exe</exe></decltask>
  <declcollection name="collection1"><tasks><name>task1</name><name>task2</name></tasks></declcollection>
  <main name="main">
    <task>task1</task>
    <collection>collection1</collection>
    <group name="group1" n="3">
      <task>task1</task><task>task1</task><task>task2</task>
      <collection>collection1</collection>
    </group>
  </main>
</topology>"#;

#[test]
fn expansion_paths_indices_and_ids() {
    let t = parse(TEST7, &opts()).0.unwrap();
    let e = expand(&t);
    assert_eq!(e.tasks.len(), 18);
    assert_eq!(e.collections.len(), 4);
    let t0 = &e.tasks[0];
    assert_eq!(
        (
            t0.path.as_str(),
            t0.hash_path.as_str(),
            t0.id,
            t0.task_index
        ),
        ("main/task1_0", "main/task1", 10674641972292662881, 0)
    );
    let last = e.tasks.last().unwrap();
    assert_eq!(last.path, "main/group1/collection1_2/task2_0");
    assert_eq!(last.hash_path, "main/group1/collection1/task2");
    assert_eq!(last.id, 4896643099580208624);
    assert_eq!(last.group, Some(0));
    let c = &e.collections[last.collection.unwrap()];
    assert_eq!(c.path, "main/group1/collection1_2");
    assert_eq!(c.collection_index, 2);
    assert_eq!(c.id, 15191567686444771359);
    assert_eq!(&e.tasks[c.tasks.clone()][1].path, &last.path);
    // Group copies carry no index; a task counts over all copies.
    let g: Vec<&str> = e
        .tasks
        .iter()
        .filter(|t| t.hash_path == "main/group1/task1")
        .map(|t| t.path.as_str())
        .collect();
    assert_eq!(
        g,
        [
            "main/group1/task1_0",
            "main/group1/task1_1",
            "main/group1/task1_2",
            "main/group1/task1_3",
            "main/group1/task1_4",
            "main/group1/task1_5"
        ]
    );
    // Every id is the checksum of path + hash string.
    for t2 in &e.tasks {
        assert_eq!(t2.id, instance_id(&t2.path, &task_hash_string(&t, t2.decl)));
    }
    for c in &e.collections {
        assert_eq!(
            c.id,
            instance_id(&c.path, &collection_hash_string(&t, c.decl))
        );
    }
}

#[test]
fn tasks_repeated_in_a_collection_count_within_the_instance() {
    let text = doc(
        "<decltask name=\"e\"><exe>x</exe></decltask>\
         <declcollection name=\"c\"><tasks><name>e</name><name n=\"2\">e</name></tasks></declcollection>",
        "<group name=\"g\" n=\"2\"><collection>c</collection></group>",
    );
    let t = parse(&text, &opts()).0.unwrap();
    let e = expand(&t);
    let paths: Vec<(&str, u32)> = e
        .tasks
        .iter()
        .map(|t| (t.path.as_str(), t.task_index))
        .collect();
    assert_eq!(
        paths,
        [
            ("main/g/c_0/e_0", 0),
            ("main/g/c_0/e_1", 1),
            ("main/g/c_0/e_2", 2),
            ("main/g/c_1/e_0", 0),
            ("main/g/c_1/e_1", 1),
            ("main/g/c_1/e_2", 2)
        ]
    );
    let c = count(&t);
    assert_eq!((c.tasks, c.collections, c.largest_collection), (6, 2, 3));
}

#[test]
fn counts_match_the_expansion() {
    let t = parse(TEST7, &opts()).0.unwrap();
    let c = count(&t);
    let e = expand(&t);
    assert_eq!(c.tasks, e.tasks.len() as u64);
    assert_eq!(c.collections, e.collections.len() as u64);
    assert_eq!(c.per_task, vec![11, 7]);
    assert_eq!(c.per_collection, vec![4]);
    assert_eq!(c.largest_collection, 2);
    assert_eq!(required_agents(&t, 1), 9);
    assert_eq!(required_agents(&t, 4), 5);
}

#[test]
fn text_forms() {
    let t = parse(TEST7, &opts()).0.unwrap();
    let mut text = Vec::new();
    crate::write_expansion_text(&t, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let head: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(
        head,
        [
            "# tasks (18)",
            "10674641972292662881 main/task1_0",
            "13669790439359244044 main/collection1_0/task1_0"
        ]
    );
    expect_test::expect![[r#"
        tasks: 18
        collections: 4
        largest collection: 2
        required agents (4 slots): 5
        task task1: 11
        task task2: 7
        collection collection1: 4
    "#]]
    .assert_eq(&count(&t).to_text(&t, 4));
    let j = count(&t).to_json(&t, 4);
    assert_eq!(j["required_agents"], 5);
    assert_eq!(j["per_task"][1]["name"], "task2");
    let mut head = serde_json::Map::new();
    head.insert("file".into(), serde_json::json!("t.xml"));
    let mut out = Vec::new();
    crate::write_expansion_json(&t, &head, &mut out).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["file"], "t.xml");
    assert_eq!(j["tasks"][1]["collection"], "main/collection1_0");
    assert_eq!(j["tasks"].as_array().unwrap().len(), 18);
    assert_eq!(j["collections"][1]["group"], "group1");
    assert_eq!(j["collections"].as_array().unwrap().len(), 4);
    let e = expand(&t);
    let ids: Vec<u64> = e.tasks[e.collections[1].tasks.clone()]
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(j["collections"][1]["tasks"], serde_json::json!(ids));
}

#[test]
fn diff_by_id() {
    let old = parse(TEST7, &opts()).0.unwrap();
    let new_text = TEST7
        .replace("n=\"3\"", "n=\"2\"")
        .replace("task2.exe", "task2b.exe");
    let new = parse(&new_text, &opts()).0.unwrap();
    let d = diff(&expand(&old), &expand(&new));
    // Copy 2 of group1 goes away (3 tasks + 2 in its collection), every task2 changes (the
    // remaining 2 + 1 + 2 in collections and main's collection's 1 are removed and added
    // again), every collection changes (its hash holds its tasks').
    assert_eq!(d.removed_tasks.len(), 5 + 5);
    assert_eq!(d.added_tasks.len(), 5);
    assert_eq!(d.removed_collections.len(), 4);
    assert_eq!(d.added_collections.len(), 3);
    assert!(d.removed_tasks.windows(2).all(|w| w[0].id <= w[1].id));
    let same = diff(&expand(&old), &expand(&old));
    assert!(same.is_empty());
    assert_eq!(
        same.to_text(),
        "----- Removed tasks -----\n----- Removed collections -----\n----- Added tasks -----\n----- Added collections -----\n"
    );
    assert_eq!(
        d.to_json()["added_collections"].as_array().map(Vec::len),
        Some(3)
    );
}

#[test]
fn schema_codes() {
    assert!(is_schema_code("dds-bad-name"));
    assert!(!is_schema_code("dds-duplicate"));
    assert!(!is_schema_code("dds-undeclared"));
}

fn mutate(text: &str, ops: &[(usize, u8, u8)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(at, kind, b) in ops {
        if bytes.is_empty() {
            bytes.push(b);
            continue;
        }
        let at = at % bytes.len();
        match kind % 4 {
            0 => bytes[at] = b,
            1 => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, b),
            _ => {
                let piece: Vec<u8> = bytes[at..(at + 12).min(bytes.len())].to_vec();
                bytes.splice(at..at, piece);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_topologies_never_panic(
        ops in proptest::collection::vec((any::<usize>(), any::<u8>(), prop::sample::select(b"<>/=\"'${}&;n0123 abx\n".to_vec())), 0..8),
        substitute in any::<bool>(),
    ) {
        let base = doc(
            "<var name=\"n\" value=\"2\"/><property name=\"p\"/>\
             <decltask name=\"a\"><exe>x ${n}</exe><properties><name access=\"read\">p</name></properties></decltask>\
             <declcollection name=\"c\"><tasks><name n=\"2\">a</name></tasks></declcollection>",
            "<task>a</task><collection>c</collection><group name=\"g\" n=\"${n}\"><task>a</task></group>",
        );
        let text = mutate(&base, &ops);
        let o = ParseOptions { vars: Vec::new(), substitute };
        let (t, d) = parse(&text, &o);
        for d in &d {
            prop_assert!(d.range().start <= d.range().end && d.range().end <= text.len(), "{d:?}");
            prop_assert!(text.is_char_boundary(d.range().start) && text.is_char_boundary(d.range().end), "{d:?}");
        }
        prop_assert_eq!(t.is_some(), !pnet_diagnostics::has_errors(&d));
        if let Some(t) = t {
            let c = count(&t);
            if c.tasks < 100_000 {
                let e = expand(&t);
                prop_assert_eq!(e.tasks.len() as u64, c.tasks);
            }
        }
    }

    #[test]
    fn random_text_never_panics(text in "\\PC{0,200}", xml in "<[a-z]{1,8}( [a-z]{1,4}=\"[^\"]{0,6}\")*>[^<]{0,20}</[a-z]{1,8}>") {
        let _ = parse(&text, &opts());
        let _ = parse(&xml, &opts());
        let _ = parse(&xml, &raw());
    }
}
