//! What each task gets: its command with `%taskIndex%` and `%collectionIndex%` substituted,
//! its environment (`DDS_*`), its assets. Pure functions.
//!
//! # The environment of a task
//!
//! | variable | value |
//! | --- | --- |
//! | `DDS_TASK_ID` | the task's id (decimal), as the front end computes it (DDS's crc64) |
//! | `DDS_SLOT_ID` | the index of its slot (worker) in the runtime's plan |
//! | `DDS_TASK_PATH` | e.g. `main/group1/collection1_3/task2_0` |
//! | `DDS_GROUP_NAME` | the name of its group, or of `main` for a task outside groups |
//! | `DDS_COLLECTION_NAME` | the name of its collection, empty outside collections |
//! | `DDS_TASK_NAME` | the name of its declaration |
//! | `DDS_TASK_INDEX` | `%taskIndex%` |
//! | `DDS_COLLECTION_INDEX` | `%collectionIndex%`, empty outside collections |
//! | `DDS_SESSION_ID` | the session's id (a random UUID) |
//! | `GSPC_DDS_SLOT_NAME`, `GSPC_DDS_HOST` | its worker's name and host |
//! | `GSPC_DDS_TOPOLOGY_DIR` | the folder of the topology file (when run from a file) |
//! | `GSPC_DDS_SESSION_DIR` | the session folder on the host (set by the wrapper) |
//! | `GSPC_DDS_ASSET_DIR` | where the global assets of the host are (set by the wrapper) |
//! | `GSPC_PROPERTY_ADDR`, `GSPC_PROPERTY_TASK`, `GSPC_PROPERTY_SECRET_FILE` | how `gspc-property` reaches the runner (set by the wrapper) |
//!
//! and `PATH` starts with the folder of `gspc-property`. Outside collections,
//! `%collectionIndex%` becomes the empty string.

use pnet_dds::{AssetVisibility, Expanded, Topology};
use pnet_protocol::property::{AssetFile, TaskSetup};

use crate::place::Slot;

/// Replaces `%taskIndex%` and `%collectionIndex%`.
pub fn substitute(text: &str, task_index: u32, collection_index: Option<u32>) -> String {
    text.replace("%taskIndex%", &task_index.to_string())
        .replace(
            "%collectionIndex%",
            &collection_index.map(|c| c.to_string()).unwrap_or_default(),
        )
}

/// The setup of task instance `task` on `slot`.
pub fn task_setup(
    topology: &Topology,
    expanded: &Expanded,
    task: usize,
    slot: &Slot,
    session: &str,
    session_dir: Option<&str>,
    topology_dir: Option<&str>,
) -> Option<TaskSetup> {
    let t = expanded.tasks.get(task)?;
    let decl = topology.tasks.get(t.decl)?;
    let collection = t.collection.and_then(|c| expanded.collections.get(c));
    let collection_index = collection.map(|c| c.collection_index);
    let collection_name = collection
        .and_then(|c| topology.collections.get(c.decl))
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let group_name = t
        .group
        .and_then(|g| topology.main.groups.get(g))
        .map_or_else(|| topology.main.name.clone(), |g| g.name.clone());
    let mut env: Vec<(String, String)> = vec![
        ("DDS_TASK_ID".into(), t.id.to_string()),
        ("DDS_SLOT_ID".into(), slot.id.to_string()),
        ("DDS_TASK_PATH".into(), t.path.clone()),
        ("DDS_GROUP_NAME".into(), group_name),
        ("DDS_COLLECTION_NAME".into(), collection_name),
        ("DDS_TASK_NAME".into(), decl.name.clone()),
        ("DDS_TASK_INDEX".into(), t.task_index.to_string()),
        (
            "DDS_COLLECTION_INDEX".into(),
            collection_index.map(|c| c.to_string()).unwrap_or_default(),
        ),
        ("DDS_SESSION_ID".into(), session.to_string()),
        ("GSPC_DDS_SLOT_NAME".into(), slot.name.clone()),
        ("GSPC_DDS_HOST".into(), slot.host.clone()),
    ];
    if let Some(dir) = topology_dir {
        env.push(("GSPC_DDS_TOPOLOGY_DIR".into(), dir.to_string()));
    }
    let assets = decl
        .assets
        .iter()
        .filter_map(|&a| topology.assets.get(a))
        .map(|a| AssetFile {
            name: a.name.clone(),
            global: a.visibility == AssetVisibility::Global,
            content: a.value.clone(),
        })
        .collect();
    Some(TaskSetup {
        session: session.to_string(),
        path: t.path.clone(),
        exe: substitute(&decl.exe.text, t.task_index, collection_index),
        env_script: decl
            .env
            .as_ref()
            .map(|e| substitute(&e.text, t.task_index, collection_index)),
        env,
        session_dir: session_dir.map(str::to_string),
        assets,
    })
}

/// The number of restarts a task may have: the largest `arg` of its `TaskCrashed` /
/// `RestartTask` triggers (0 without triggers).
pub fn restarts_allowed(topology: &Topology, expanded: &Expanded, task: usize) -> Option<u32> {
    let t = expanded.tasks.get(task)?;
    let decl = topology.tasks.get(t.decl)?;
    if decl.triggers.is_empty() {
        return None;
    }
    decl.triggers
        .iter()
        .filter_map(|&i| topology.triggers.get(i))
        .map(|t| t.restarts)
        .max()
}

/// A random session id in the form of a UUID (version 4).
pub fn session_id() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Builder;

    fn slot() -> Slot {
        Slot {
            id: 3,
            name: "worker-h-3".into(),
            class: "worker".into(),
            host: "h".into(),
            capabilities: vec!["worker".into()],
        }
    }

    fn get<'a>(s: &'a TaskSetup, k: &str) -> &'a str {
        s.env
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap()
    }

    #[test]
    fn substitution_and_environment() {
        let mut b = Builder::new();
        let a = b.asset("cfg", AssetVisibility::Task, "k=v");
        let g = b.asset("shared", AssetVisibility::Global, "s");
        let t = b.task("work", "app --t %taskIndex% --c %collectionIndex% $HOME");
        b.task_env(t, "setup.sh %taskIndex%");
        b.task_asset(t, a);
        b.task_asset(t, g);
        let c = b.collection("unit", &[t, t]);
        b.main_tasks(&[t]);
        b.main_collections(&[c, c]);
        let (topo, exp) = b.build();
        // main/unit_1/work_1
        let s = task_setup(&topo, &exp, 4, &slot(), "sess", None, Some("/topo")).unwrap();
        assert_eq!(s.path, "main/unit_1/work_1");
        assert_eq!(s.exe, "app --t 1 --c 1 $HOME");
        assert_eq!(s.env_script.as_deref(), Some("setup.sh 1"));
        assert_eq!(get(&s, "DDS_TASK_ID"), "1004");
        assert_eq!(get(&s, "DDS_SLOT_ID"), "3");
        assert_eq!(get(&s, "DDS_TASK_PATH"), "main/unit_1/work_1");
        assert_eq!(get(&s, "DDS_GROUP_NAME"), "main");
        assert_eq!(get(&s, "DDS_COLLECTION_NAME"), "unit");
        assert_eq!(get(&s, "DDS_TASK_NAME"), "work");
        assert_eq!(get(&s, "DDS_TASK_INDEX"), "1");
        assert_eq!(get(&s, "DDS_COLLECTION_INDEX"), "1");
        assert_eq!(get(&s, "DDS_SESSION_ID"), "sess");
        assert_eq!(get(&s, "GSPC_DDS_TOPOLOGY_DIR"), "/topo");
        assert_eq!(get(&s, "GSPC_DDS_SLOT_NAME"), "worker-h-3");
        assert_eq!(s.assets.len(), 2);
        assert!(!s.assets[0].global);
        assert!(s.assets[1].global);
        assert_eq!(s.assets[0].content, "k=v");
        // Outside collections.
        let s = task_setup(&topo, &exp, 0, &slot(), "sess", None, None).unwrap();
        assert_eq!(s.exe, "app --t 0 --c  $HOME");
        assert_eq!(get(&s, "DDS_COLLECTION_NAME"), "");
        assert_eq!(get(&s, "DDS_COLLECTION_INDEX"), "");
        assert!(task_setup(&topo, &exp, 99, &slot(), "s", None, None).is_none());
    }

    #[test]
    fn restarts_come_from_triggers() {
        let mut b = Builder::new();
        let t1 = b.trigger("t1", 2);
        let t2 = b.trigger("t2", 5);
        let a = b.task("a", "x");
        b.task_trigger(a, t1);
        b.task_trigger(a, t2);
        let p = b.task("p", "x");
        b.main_tasks(&[a, p]);
        let (topo, exp) = b.build();
        assert_eq!(restarts_allowed(&topo, &exp, 0), Some(5));
        assert_eq!(restarts_allowed(&topo, &exp, 1), None);
    }

    #[test]
    fn session_ids_look_like_uuids() {
        let a = session_id().unwrap();
        let b = session_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert_eq!(a.matches('-').count(), 4);
    }
}
