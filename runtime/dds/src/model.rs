//! The checked topology (declarations, names resolved to indices) and its expansion.
//!
//! Spans are byte ranges into the text that was parsed (after `${var}` substitution the
//! spans still point into the original text: the substitution keeps a map back).

use std::ops::Range;

/// A whole `<topology>`, valid (no error diagnostics) when returned by `parse`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub name: String,
    pub vars: Vec<Var>,
    pub properties: Vec<PropertyDecl>,
    pub assets: Vec<AssetDecl>,
    pub requirements: Vec<RequirementDecl>,
    pub triggers: Vec<TriggerDecl>,
    pub tasks: Vec<TaskDecl>,
    pub collections: Vec<CollectionDecl>,
    pub main: MainDecl,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    pub value: String,
    pub span: Range<usize>,
}

/// Where a property's writes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PropertyScope {
    /// Every task that reads it.
    Global,
    /// Only tasks of the same collection instance.
    Collection,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyDecl {
    pub name: String,
    pub scope: PropertyScope,
    pub span: Range<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssetVisibility {
    /// Written for each task that declares it.
    Task,
    /// Written once per host (DDS: once per agent/session), shared by the tasks there.
    Global,
}

/// An asset; DDS has only `type="inline"`: the value is the file's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssetDecl {
    pub name: String,
    pub visibility: AssetVisibility,
    pub value: String,
    pub span: Range<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequirementKind {
    /// Full-string regex on the worker node name (an empty worker-node name satisfies it).
    WnName,
    /// Full-string regex on the host name.
    HostName,
    /// Full-string regex on the worker group name (our worker class).
    GroupName,
    /// The value is a number of GPUs the task needs.
    Gpu,
    /// At most `value` instances of the task (or collection) per host.
    MaxInstances,
    /// A capability the worker must have (our meaningful reading of DDS's `custom`).
    Custom,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequirementDecl {
    pub name: String,
    pub kind: RequirementKind,
    pub value: String,
    pub span: Range<usize>,
}

/// `condition="TaskCrashed" action="RestartTask" arg="N"`: restart a crashed task at most N
/// times (`arg` as written; [`TriggerDecl::restarts`] is its value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerDecl {
    pub name: String,
    pub arg: String,
    /// The number of restarts allowed (`arg` parsed; a non-number is a diagnostic).
    pub restarts: u32,
    pub span: Range<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// `<exe>` or `<env>`: a command line run by a shell (it may contain `%taskIndex%`,
/// `%collectionIndex%` and `$ENV`, substituted at run time), and whether the executable is
/// already on the worker host (`reachable`, default true for our runtime: we never upload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub text: String,
    pub reachable: bool,
    pub span: Range<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskDecl {
    pub name: String,
    pub exe: Command,
    pub env: Option<Command>,
    /// Indices into [`Topology::requirements`].
    pub requirements: Vec<usize>,
    /// Indices into [`Topology::properties`] with the task's access.
    pub properties: Vec<(usize, Access)>,
    /// Indices into [`Topology::triggers`].
    pub triggers: Vec<usize>,
    /// Indices into [`Topology::assets`].
    pub assets: Vec<usize>,
    pub span: Range<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionDecl {
    pub name: String,
    /// Indices into [`Topology::requirements`].
    pub requirements: Vec<usize>,
    /// Indices into [`Topology::tasks`], in order, a `<name n="3">` repeated 3 times.
    pub tasks: Vec<usize>,
    pub span: Range<usize>,
}

/// A `<group name n>` of `<main>`: its tasks and collections are copied `n` times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDecl {
    pub name: String,
    pub n: u32,
    /// Indices into [`Topology::tasks`] / [`Topology::collections`], in document order.
    pub tasks: Vec<usize>,
    pub collections: Vec<usize>,
    pub span: Range<usize>,
}

/// `<main name>`: tasks and collections that run once, and groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MainDecl {
    pub name: String,
    pub tasks: Vec<usize>,
    pub collections: Vec<usize>,
    pub groups: Vec<GroupDecl>,
    pub span: Range<usize>,
}

/// Every task and collection instance of a topology, in DDS's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expanded {
    pub tasks: Vec<TaskInstance>,
    pub collections: Vec<CollectionInstance>,
}

/// One task that will run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInstance {
    /// DDS's id (crc64 of the hash path and the definition, as DDS computes it).
    pub id: u64,
    /// The path with indices, e.g. `main/group1/collection1_3/task2_0`.
    pub path: String,
    /// The path without indices, e.g. `main/group1/collection1/task2`.
    pub hash_path: String,
    /// Index into [`Topology::tasks`].
    pub decl: usize,
    /// `%taskIndex%` / `DDS_TASK_INDEX`.
    pub task_index: u32,
    /// Index into [`Expanded::collections`] if the task belongs to a collection.
    pub collection: Option<usize>,
    /// Index into [`MainDecl::groups`] if the task comes from a group.
    pub group: Option<usize>,
}

/// One collection instance (its tasks run together, on one host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionInstance {
    pub id: u64,
    /// e.g. `main/group1/collection1_3`.
    pub path: String,
    /// e.g. `main/group1/collection1`.
    pub hash_path: String,
    /// Index into [`Topology::collections`].
    pub decl: usize,
    /// `%collectionIndex%` / `DDS_COLLECTION_INDEX`.
    pub collection_index: u32,
    pub group: Option<usize>,
    /// Its tasks: indices into [`Expanded::tasks`].
    pub tasks: Range<usize>,
}
