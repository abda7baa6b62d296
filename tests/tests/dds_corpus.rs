//! DDS's own topology files (`shared/corpus/dds`, read in place): the facts of
//! `shared/spec/topologies.md`, checked through the library and through `gspc-topology`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use pnet_dds::{ParseOptions, Topology};

fn dds() -> PathBuf {
    pnet_tests::corpus().join("dds")
}

fn lib_tests() -> PathBuf {
    dds().join("dds-topology-lib/tests")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn raw() -> ParseOptions {
    ParseOptions {
        vars: Vec::new(),
        substitute: false,
    }
}

fn load(path: &Path) -> Topology {
    let (t, d) = pnet_dds::parse(&read(path), &ParseOptions::default());
    assert!(
        !pnet_topology_errors(&d),
        "{}: {:?}",
        path.display(),
        d.iter().map(ToString::to_string).collect::<Vec<_>>()
    );
    t.unwrap_or_else(|| panic!("{} did not parse", path.display()))
}

fn pnet_topology_errors(d: &[pnet_dds::Diagnostic]) -> bool {
    d.iter().any(pnet_dds::Diagnostic::is_error)
}

/// `id path` lines of a DDS map file, sorted.
fn map_file(name: &str) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = read(&lib_tests().join(name))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (id, path) = l.split_once(' ').expect("id path");
            (id.parse().expect("id"), path.to_string())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn topology_test_7_matches_dds_maps() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let t = load(&lib_tests().join("topology_test_7.xml"));
    let e = pnet_dds::expand(&t);
    assert_eq!(e.tasks.len(), 18);
    assert_eq!(e.collections.len(), 4);
    // Hash paths as multisets, and DDS's ids with them.
    let mut tasks: Vec<(u64, String)> = e
        .tasks
        .iter()
        .map(|t| (t.id, t.hash_path.clone()))
        .collect();
    tasks.sort();
    assert_eq!(tasks, map_file("topology_test_7_maps_2.txt"));
    let mut colls: Vec<(u64, String)> = e
        .collections
        .iter()
        .map(|c| (c.id, c.hash_path.clone()))
        .collect();
    colls.sort();
    assert_eq!(colls, map_file("topology_test_7_maps_3.txt"));
}

#[test]
fn topology_test_diff_matches_dds() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let old = pnet_dds::expand(&load(&lib_tests().join("topology_test_diff_1.xml")));
    let new = pnet_dds::expand(&load(&lib_tests().join("topology_test_diff_2.xml")));
    let d = pnet_dds::diff(&old, &new);
    assert_eq!(d.removed_tasks.len(), 9);
    assert_eq!(d.added_tasks.len(), 11);
    assert_eq!(d.removed_collections.len(), 4);
    assert_eq!(d.added_collections.len(), 5);
    // The whole text, ids and paths, as DDS wrote it.
    assert_eq!(
        d.to_text(),
        read(&lib_tests().join("topology_test_diff.txt"))
    );
}

#[test]
fn raw_schema_check_of_tests_2_to_6() {
    if pnet_tests::corpus_absent() {
        return;
    }
    for n in 2..=6 {
        let path = lib_tests().join(format!("topology_test_{n}.xml"));
        let (t, d) = pnet_dds::parse(&read(&path), &raw());
        assert!(t.is_none(), "topology_test_{n}.xml must be rejected");
        let schema: Vec<&str> = d
            .iter()
            .filter(|d| pnet_dds::is_schema_code(d.code))
            .map(|d| d.code)
            .collect();
        if n == 6 {
            assert_eq!(
                schema,
                Vec::<&str>::new(),
                "topology_test_6.xml passes the schema"
            );
            // Its duplicated names are rejected where they are used.
            let dups: Vec<&str> = d
                .iter()
                .filter(|d| d.code == "dds-duplicate")
                .map(|d| d.message.as_str())
                .collect();
            for name in [
                "property `property3`",
                "task `task2`",
                "collection `collection2`",
                "group `group2`",
            ] {
                assert!(dups.iter().any(|m| m.contains(name)), "{name}: {dups:?}");
            }
        } else {
            assert!(
                !schema.is_empty(),
                "topology_test_{n}.xml fails the schema: {d:?}"
            );
        }
    }
}

/// Every other topology of the folder, accepted (with `${var}` substitution).
fn accepted_files() -> Vec<PathBuf> {
    pnet_tests::net_files(&dds())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !(2..=6).any(|n| name == format!("topology_test_{n}.xml"))
        })
        .collect()
}

#[test]
fn every_other_file_is_accepted() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let files = accepted_files();
    assert_eq!(files.len(), 18, "{files:?}");
    for f in &files {
        let (t, d) = pnet_dds::parse(&read(f), &ParseOptions::default());
        assert!(t.is_some(), "{}: {d:?}", f.display());
    }
}

fn gspc_topology() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| pnet_tests::build_packages(&["pnet-dds"]))
        .join("gspc-topology")
}

#[test]
fn counts_through_the_binary() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let files = accepted_files();
    let out = Command::new(gspc_topology())
        .arg("count")
        .arg("--json")
        .args(&files)
        .output()
        .expect("run gspc-topology");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let by_name = |name: &str| {
        v["files"]
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|f| f["file"].as_str().is_some_and(|p| p.ends_with(name)))
            })
            .cloned()
            .unwrap_or_else(|| panic!("{name} not counted"))
    };
    // (file, tasks, collections, largest collection), derived by hand from the files.
    let expected = [
        // main: task1 + collection1 (2); group1 x3: task1, task1, task2 + collection1 (2)
        ("topology_test_7.xml", 18, 4, 2),
        // the same with n = 100000
        ("topology_test_8.xml", 500_003, 100_001, 2),
        // SleepTask + SleepCollection (2) + 2 x (SleepTask + SleepCollection)
        ("sleep_test.xml", 9, 3, 2),
        // numCollections = 15 collections of 10 tasks
        ("topology_test_property_2.xml", 150, 15, 10),
        // 3 groups of 1000 tasks
        ("topology_scheduler_test_1.xml", 3000, 0, 0),
        // CalibCollection (5 + 5) + 10 x RecoCollection (10 + 10 + 10)
        ("topology_scheduler_test_3.xml", 310, 11, 30),
        // an empty main
        ("topology_test_creator_2.xml", 0, 0, 0),
        // TaskTypeTwo + nInstances = 5 x TaskTypeOne
        ("tutorial1_topo.xml", 6, 0, 0),
    ];
    for (name, tasks, colls, largest) in expected {
        let f = by_name(name);
        assert_eq!(f["valid"], true, "{name}");
        assert_eq!(f["tasks"], tasks, "{name}");
        assert_eq!(f["collections"], colls, "{name}");
        assert_eq!(f["largest_collection"], largest, "{name}");
    }
    // Required agents: ceil(310 / max(1, 30)) = 11, ceil(310 / 64) = 5.
    assert_eq!(
        by_name("topology_scheduler_test_3.xml")["required_agents"],
        11
    );
    let out = Command::new(gspc_topology())
        .args(["required-agents", "--slots", "64"])
        .arg(dds().join("dds-commander/tests/topology_scheduler_test_3.xml"))
        .output()
        .expect("run gspc-topology");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5");
}

#[test]
fn expand_and_count_snapshots() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let out = Command::new(gspc_topology())
        .arg("expand")
        .arg(lib_tests().join("topology_test_diff_1.xml"))
        .output()
        .expect("run gspc-topology");
    assert!(out.status.success());
    expect_test::expect![[r#"
        # tasks (18)
        10674641972292662881 main/task1_0
        9004533872436269829 main/taskV_0
        13669790439359244044 main/collection1_0/task1_0
        4637801922912057020 main/collection1_0/task2_0
        14435762356918730338 main/collectionV_0/taskV_0
        13497261937846950566 main/group1/task1_0
        5091312252452506390 main/group1/task2_0
        7728561123117445207 main/group1/collection1_0/task1_0
        10856292869858992615 main/group1/collection1_0/task2_0
        4454833187634398688 main/group1/collectionV_0/taskV_0
        14810135450329001418 main/group1/task1_1
        3485849908047887482 main/group1/task2_1
        9362935740037948551 main/group1/collection1_1/task1_0
        8937329476543935799 main/group1/collection1_1/task2_0
        10618266544840754070 main/group1/collectionV_1/taskV_0
        9564646163229669985 main/group2/task1_0
        17472753258351578381 main/group2/task1_1
        7580670881225839801 main/group2/task1_2
        # collections (6)
        7788367811086353238 main/collection1_0
        17655344919694847366 main/collectionV_0
        11925457751125447856 main/group1/collection1_0
        11385852863586532167 main/group1/collectionV_0
        2209516854130033724 main/group1/collection1_1
        10776790225199280724 main/group1/collectionV_1
    "#]]
    .assert_eq(&String::from_utf8_lossy(&out.stdout));
    let out = Command::new(gspc_topology())
        .args(["count", "--slots", "4"])
        .arg(dds().join("res/tests/env_test.xml"))
        .output()
        .expect("run gspc-topology");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    expect_test::expect![[r#"
        tasks: 9
        collections: 3
        largest collection: 2
        required agents (4 slots): 3
        task EnvTask: 9
        collection EnvCollection: 3
    "#]]
    .assert_eq(&body);
}

#[test]
fn diff_through_the_binary() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let out = Command::new(gspc_topology())
        .arg("diff")
        .arg(lib_tests().join("topology_test_diff_1.xml"))
        .arg(lib_tests().join("topology_test_diff_2.xml"))
        .output()
        .expect("run gspc-topology");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        read(&lib_tests().join("topology_test_diff.txt"))
    );
}

#[test]
fn raw_validation_through_the_binary() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let out = Command::new(gspc_topology())
        .args(["validate", "--raw"])
        .arg(lib_tests().join("topology_test_6.xml"))
        .output()
        .expect("run gspc-topology");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[dds-duplicate]"), "{err}");
    assert!(err.contains("topology_test_6.xml:17:"), "{err}");
}
