//! Hand-built topologies for tests (independent of the XML front end): a [`Builder`] of a
//! [`Topology`] and a simple [`Expanded`].

use pnet_dds::{
    Access, AssetDecl, AssetVisibility, CollectionDecl, CollectionInstance, Command, Expanded,
    MainDecl, PropertyDecl, PropertyScope, RequirementDecl, RequirementKind, TaskDecl,
    TaskInstance, Topology, TriggerDecl,
};

pub struct Builder {
    topo: Topology,
    next_span: usize,
    main_tasks: Vec<usize>,
    main_collections: Vec<usize>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            topo: Topology {
                name: "test".into(),
                vars: Vec::new(),
                properties: Vec::new(),
                assets: Vec::new(),
                requirements: Vec::new(),
                triggers: Vec::new(),
                tasks: Vec::new(),
                collections: Vec::new(),
                main: MainDecl {
                    name: "main".into(),
                    tasks: Vec::new(),
                    collections: Vec::new(),
                    groups: Vec::new(),
                    span: 0..4,
                },
            },
            next_span: 10,
            main_tasks: Vec::new(),
            main_collections: Vec::new(),
        }
    }

    fn span(&mut self) -> std::ops::Range<usize> {
        let s = self.next_span..self.next_span + 5;
        self.next_span += 10;
        s
    }

    pub fn requirement(&mut self, name: &str, kind: RequirementKind, value: &str) -> usize {
        let span = self.span();
        self.topo.requirements.push(RequirementDecl {
            name: name.into(),
            kind,
            value: value.into(),
            span,
        });
        self.topo.requirements.len() - 1
    }

    pub fn property(&mut self, name: &str, scope: PropertyScope) -> usize {
        let span = self.span();
        self.topo.properties.push(PropertyDecl {
            name: name.into(),
            scope,
            span,
        });
        self.topo.properties.len() - 1
    }

    pub fn asset(&mut self, name: &str, visibility: AssetVisibility, value: &str) -> usize {
        let span = self.span();
        self.topo.assets.push(AssetDecl {
            name: name.into(),
            visibility,
            value: value.into(),
            span,
        });
        self.topo.assets.len() - 1
    }

    pub fn trigger(&mut self, name: &str, restarts: u32) -> usize {
        let span = self.span();
        self.topo.triggers.push(TriggerDecl {
            name: name.into(),
            arg: restarts.to_string(),
            restarts,
            span,
        });
        self.topo.triggers.len() - 1
    }

    pub fn task(&mut self, name: &str, exe: &str) -> usize {
        let span = self.span();
        self.topo.tasks.push(TaskDecl {
            name: name.into(),
            exe: Command {
                text: exe.into(),
                reachable: true,
                span: span.clone(),
            },
            env: None,
            requirements: Vec::new(),
            properties: Vec::new(),
            triggers: Vec::new(),
            assets: Vec::new(),
            span,
        });
        self.topo.tasks.len() - 1
    }

    pub fn task_env(&mut self, task: usize, env: &str) {
        let span = self.span();
        self.topo.tasks[task].env = Some(Command {
            text: env.into(),
            reachable: true,
            span,
        });
    }

    pub fn task_requires(&mut self, task: usize, req: usize) {
        self.topo.tasks[task].requirements.push(req);
    }

    pub fn task_property(&mut self, task: usize, prop: usize, access: Access) {
        self.topo.tasks[task].properties.push((prop, access));
    }

    pub fn task_trigger(&mut self, task: usize, trigger: usize) {
        self.topo.tasks[task].triggers.push(trigger);
    }

    pub fn task_asset(&mut self, task: usize, asset: usize) {
        self.topo.tasks[task].assets.push(asset);
    }

    pub fn collection(&mut self, name: &str, tasks: &[usize]) -> usize {
        let span = self.span();
        self.topo.collections.push(CollectionDecl {
            name: name.into(),
            requirements: Vec::new(),
            tasks: tasks.to_vec(),
            span,
        });
        self.topo.collections.len() - 1
    }

    pub fn collection_requires(&mut self, c: usize, req: usize) {
        self.topo.collections[c].requirements.push(req);
    }

    /// Tasks directly in main (each entry one instance).
    pub fn main_tasks(&mut self, tasks: &[usize]) {
        self.main_tasks.extend_from_slice(tasks);
    }

    /// Collections directly in main (each entry one instance).
    pub fn main_collections(&mut self, collections: &[usize]) {
        self.main_collections.extend_from_slice(collections);
    }

    /// The topology and a simple expansion: main's tasks (`main/<task>_<i>`, `i` counting
    /// the instances of that declaration), then main's collections
    /// (`main/<collection>_<j>/<task>_<k>`, `k` counting within the collection instance).
    pub fn build(mut self) -> (Topology, Expanded) {
        self.topo.main.tasks = self.main_tasks.clone();
        self.topo.main.collections = self.main_collections.clone();
        let mut exp = Expanded::default();
        let mut seen: Vec<u32> = vec![0; self.topo.tasks.len()];
        for &t in &self.main_tasks {
            let name = &self.topo.tasks[t].name;
            let i = seen[t];
            seen[t] += 1;
            exp.tasks.push(TaskInstance {
                id: 1000 + exp.tasks.len() as u64,
                path: format!("main/{name}_{i}"),
                hash_path: format!("main/{name}"),
                decl: t,
                task_index: i,
                collection: None,
                group: None,
            });
        }
        let mut cseen: Vec<u32> = vec![0; self.topo.collections.len()];
        for &c in &self.main_collections {
            let cname = self.topo.collections[c].name.clone();
            let j = cseen[c];
            cseen[c] += 1;
            let start = exp.tasks.len();
            let ci = exp.collections.len();
            let mut within: Vec<u32> = vec![0; self.topo.tasks.len()];
            for &t in &self.topo.collections[c].tasks {
                let name = &self.topo.tasks[t].name;
                let k = within[t];
                within[t] += 1;
                exp.tasks.push(TaskInstance {
                    id: 1000 + exp.tasks.len() as u64,
                    path: format!("main/{cname}_{j}/{name}_{k}"),
                    hash_path: format!("main/{cname}/{name}"),
                    decl: t,
                    task_index: k,
                    collection: Some(ci),
                    group: None,
                });
            }
            exp.collections.push(CollectionInstance {
                id: 5000 + ci as u64,
                path: format!("main/{cname}_{j}"),
                hash_path: format!("main/{cname}"),
                decl: c,
                collection_index: j,
                group: None,
                tasks: start..exp.tasks.len(),
            });
        }
        (self.topo, exp)
    }
}
