//! A run's client among several (`--clients`): its barriers and how it
//! fails out of the run (see `results::meet`).

use anyhow::Result;

use super::Run;

impl Run<'_> {
    /// With `--clients`: waits at barrier `name` for the other clients;
    /// None alone.
    pub(super) fn barrier(
        &mut self,
        name: &str,
        note: Option<&str>,
    ) -> Result<Option<crate::results::meet::Release>> {
        match self.meeting.as_mut() {
            Some(m) => Ok(Some(m.barrier(&mut self.results, name, note)?)),
            None => Ok(None),
        }
    }

    /// With `--clients`: this client fails out of the run (the others go
    /// on without it; the run ends partial) and its run stops. A follower
    /// leaves at once; client 0 stays for the close barriers, to drop the
    /// target's database only once the others are done.
    pub(super) fn leave(&mut self, why: &str) -> Result<()> {
        if self.departed {
            return Ok(());
        }
        let leader = self.meeting.as_ref().map(|m| m.me.leader());
        match leader {
            Some(true) => {
                if let Some(m) = self.meeting.as_mut() {
                    m.fail(&mut self.results, why)?;
                }
            }
            Some(false) => {
                if let Some(mut m) = self.meeting.take() {
                    m.leave(&mut self.results, why)?;
                }
            }
            None => return Ok(()),
        }
        self.departed = true;
        Ok(())
    }
}
