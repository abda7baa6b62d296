//! Bringing a job's core back from its journal (see [`crate::journal`]): the engine is made
//! again from the bundle and inputs, and the journaled operations are applied in their
//! order, each after the engine has fired as many times as it had when the operation was
//! journaled. Firing is deterministic (the same seed, the same choices, in batches as in
//! single steps), so the engine comes back to the state it had; the tasks it handed out and
//! that no operation completed or discarded are queued again (they run again).

use std::collections::{BTreeMap, HashSet};

use pnet_engine::{Step, Task, TaskId};

use super::Core;
use crate::journal::Op;

impl Core<'_> {
    /// Replays `ops` on a core just made (before any pump), then queues the tasks that were
    /// handed out and have no result. An error says where the replay and the journal part.
    /// The operations are moved in: their values go to the engine as they are.
    pub fn replay(&mut self, ops: Vec<(u64, Op)>) -> Result<(), String> {
        // Tasks handed out and not ended, by id; the ones a eureka cancelled.
        let mut live: BTreeMap<u64, Task> = BTreeMap::new();
        let mut cancelled: HashSet<u64> = HashSet::new();
        let journaling = self.ops.take();
        let r = self.replay_ops(ops, &mut live, &mut cancelled);
        self.ops = journaling;
        r?;
        for (id, task) in live {
            if cancelled.contains(&id) {
                // Its eureka came before the crash; its answer did not.
                self.discard(TaskId(id))
                    .map_err(|e| format!("task {id}: {e}"))?;
            } else {
                self.enqueue(task).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    fn replay_ops(
        &mut self,
        ops: Vec<(u64, Op)>,
        live: &mut BTreeMap<u64, Task>,
        cancelled: &mut HashSet<u64>,
    ) -> Result<(), String> {
        for (k, (firings, op)) in ops.into_iter().enumerate() {
            self.fire_to(firings, live, cancelled)
                .map_err(|e| format!("operation {k}: {e}"))?;
            let what = op.what();
            let bad = |e: String| format!("operation {k} ({what}): {e}");
            match op {
                Op::Done {
                    task,
                    transition,
                    outputs,
                } => {
                    let t = live
                        .remove(&task)
                        .ok_or_else(|| bad(format!("the engine handed out no task {task}")))?;
                    if t.name != *transition {
                        return Err(bad(format!(
                            "task {task} is of transition `{}`, the journal says `{transition}`",
                            t.name
                        )));
                    }
                    let ports = self.fns[t.function.index()]
                        .as_ref()
                        .map(|i| i.outputs.clone())
                        .unwrap_or_default();
                    if ports.len() != outputs.len() {
                        return Err(bad(format!(
                            "{} outputs for {} out ports",
                            outputs.len(),
                            ports.len()
                        )));
                    }
                    let outs = ports.into_iter().zip(outputs).collect();
                    self.tasks_done += 1;
                    self.engine
                        .complete_task(TaskId(task), outs)
                        .map_err(|e| bad(e.to_string()))?;
                }
                Op::Discard { task } => {
                    live.remove(&task);
                    self.engine
                        .discard_task(TaskId(task))
                        .map_err(|e| bad(e.to_string()))?;
                }
                Op::Put { place, value } => self
                    .engine
                    .put_token(&place, value)
                    .map_err(|e| bad(e.to_string()))?,
                Op::Response { place, value } => {
                    // Its client is gone with the old runtime; the answer goes nowhere.
                    let _ = self.engine.request_response(&place, value);
                }
                Op::Close => self.closed = true,
            }
            self.after_replayed(live, cancelled);
        }
        Ok(())
    }

    /// Fires until the engine has fired `firings` times.
    fn fire_to(
        &mut self,
        firings: u64,
        live: &mut BTreeMap<u64, Task>,
        cancelled: &mut HashSet<u64>,
    ) -> Result<(), String> {
        loop {
            let now = self.engine.stats().firings;
            if now == firings {
                return Ok(());
            }
            if now > firings {
                return Err(format!(
                    "the engine fired {now} times, the journal says {firings}"
                ));
            }
            let (_, step) = self
                .engine
                .run_steps(firings - now)
                .map_err(|e| e.to_string())?;
            match step {
                Step::Fired => {}
                Step::Task(t) => {
                    live.insert(t.id.0, t);
                }
                Step::Waiting | Step::Done => {
                    return Err(format!(
                        "the engine stopped after {} firings, the journal says {firings}",
                        self.engine.stats().firings
                    ));
                }
            }
            self.after_replayed(live, cancelled);
        }
    }

    /// A eureka cancels the live tasks of its groups (as [`Core::after_engine`] does); the
    /// responses' clients are gone.
    fn after_replayed(&mut self, live: &BTreeMap<u64, Task>, cancelled: &mut HashSet<u64>) {
        if !self.engine.has_eurekas_or_responses() {
            return;
        }
        let groups = self.engine.take_eurekas();
        for (id, t) in live {
            if t.eureka_group.as_ref().is_some_and(|g| groups.contains(g)) {
                cancelled.insert(*id);
            }
        }
        self.engine.take_responses();
    }
}
