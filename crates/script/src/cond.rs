//! Owns a client's run-time `\if` stack with pgbench's semantics (`conditional.c` and
//! the skip loop of the client state machine): which branch runs, what a skipped
//! `\if`/`\elif`/`\else`/`\endif` does, and when execution resumes.

/// State of one `\if` level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CondState {
    /// In a branch being executed.
    True,
    /// In a false branch; a later `\elif`/`\else` may run.
    False,
    /// Inside an inactive branch (or after a taken one): everything is skipped to `\endif`.
    Ignored,
    /// In an `\else` branch being executed.
    ElseTrue,
    /// In an `\else` branch being skipped.
    ElseFalse,
}

/// The conditional commands, as the skip loop sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CondCommand {
    /// `\if`
    If,
    /// `\elif`
    Elif,
    /// `\else`
    Else,
    /// `\endif`
    EndIf,
    /// Anything else.
    Other,
}

/// What the engine does with a command met while skipping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipStep {
    /// Skip it and look at the next command.
    Skip,
    /// Execute this command normally (an `\elif` whose condition must be evaluated).
    ExecuteThis,
    /// Skip it, then resume normal execution at the next command.
    ResumeAfter,
}

/// An inconsistent use (cannot happen for scripts accepted by [`crate::parse_script`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent conditional stack")]
pub struct CondError;

/// A client's conditional stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CondStack {
    stack: Vec<CondState>,
}

impl CondStack {
    /// An empty stack.
    pub fn new() -> CondStack {
        CondStack::default()
    }

    /// Empties the stack (on errors and retries).
    pub fn reset(&mut self) {
        self.stack.clear();
    }

    /// Depth.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Top state.
    pub fn peek(&self) -> Option<CondState> {
        self.stack.last().copied()
    }

    /// Whether commands execute now (empty stack, or a taken branch).
    pub fn is_active(&self) -> bool {
        matches!(
            self.peek(),
            None | Some(CondState::True) | Some(CondState::ElseTrue)
        )
    }

    /// Executing `\if` with the truth of its condition.
    pub fn execute_if(&mut self, cond: bool) {
        self.stack.push(if cond {
            CondState::True
        } else {
            CondState::False
        });
    }

    /// Executing `\elif`: returns `false` when a previous branch was taken (then the
    /// level becomes ignored and the condition must not be evaluated).
    pub fn elif_needs_eval(&mut self) -> bool {
        if let Some(top) = self.stack.last_mut() {
            if *top == CondState::True {
                *top = CondState::Ignored;
                return false;
            }
        }
        true
    }

    /// Executing `\elif` after its condition was evaluated.
    pub fn execute_elif(&mut self, cond: bool) -> Result<(), CondError> {
        let top = self.stack.last_mut().ok_or(CondError)?;
        *top = if cond {
            CondState::True
        } else {
            CondState::False
        };
        Ok(())
    }

    /// Executing `\else` (only reached from a taken branch).
    pub fn execute_else(&mut self) -> Result<(), CondError> {
        match self.stack.last_mut() {
            Some(top @ CondState::True) => {
                *top = CondState::ElseFalse;
                Ok(())
            }
            _ => Err(CondError),
        }
    }

    /// Executing `\endif`.
    pub fn execute_endif(&mut self) -> Result<(), CondError> {
        self.stack.pop().map(|_| ()).ok_or(CondError)
    }

    /// One step of pgbench's skip loop for a command met while inactive.
    pub fn skip_step(&mut self, cmd: CondCommand) -> SkipStep {
        let Some(top) = self.peek() else {
            return SkipStep::ResumeAfter;
        };
        match top {
            CondState::False => match cmd {
                CondCommand::If => {
                    self.stack.push(CondState::Ignored);
                    SkipStep::Skip
                }
                CondCommand::Elif => SkipStep::ExecuteThis,
                CondCommand::Else => {
                    if let Some(t) = self.stack.last_mut() {
                        *t = CondState::ElseTrue;
                    }
                    SkipStep::ResumeAfter
                }
                CondCommand::EndIf => {
                    self.stack.pop();
                    if self.is_active() {
                        SkipStep::ResumeAfter
                    } else {
                        SkipStep::Skip
                    }
                }
                CondCommand::Other => SkipStep::Skip,
            },
            CondState::Ignored | CondState::ElseFalse => match cmd {
                CondCommand::If => {
                    self.stack.push(CondState::Ignored);
                    SkipStep::Skip
                }
                CondCommand::EndIf => {
                    self.stack.pop();
                    if self.is_active() {
                        SkipStep::ResumeAfter
                    } else {
                        SkipStep::Skip
                    }
                }
                _ => SkipStep::Skip,
            },
            // active states never skip
            CondState::True | CondState::ElseTrue => SkipStep::ResumeAfter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_false_else_runs_else_branch() {
        let mut c = CondStack::new();
        c.execute_if(false);
        assert!(!c.is_active());
        assert_eq!(c.skip_step(CondCommand::Other), SkipStep::Skip);
        assert_eq!(c.skip_step(CondCommand::Else), SkipStep::ResumeAfter);
        assert!(c.is_active());
        c.execute_endif().unwrap();
        assert_eq!(c.depth(), 0);
    }

    #[test]
    fn taken_branch_ignores_elif_and_else() {
        let mut c = CondStack::new();
        c.execute_if(true);
        assert!(!c.elif_needs_eval());
        assert_eq!(c.peek(), Some(CondState::Ignored));
        assert_eq!(c.skip_step(CondCommand::Else), SkipStep::Skip);
        assert_eq!(c.skip_step(CondCommand::EndIf), SkipStep::ResumeAfter);
        assert!(c.is_active());
    }

    #[test]
    fn nested_if_in_false_branch_is_ignored() {
        let mut c = CondStack::new();
        c.execute_if(false);
        assert_eq!(c.skip_step(CondCommand::If), SkipStep::Skip);
        // the nested \elif/\else must not run
        assert_eq!(c.skip_step(CondCommand::Elif), SkipStep::Skip);
        assert_eq!(c.skip_step(CondCommand::Else), SkipStep::Skip);
        assert_eq!(c.skip_step(CondCommand::EndIf), SkipStep::Skip);
        // the outer \elif is evaluated
        assert_eq!(c.skip_step(CondCommand::Elif), SkipStep::ExecuteThis);
        assert!(c.elif_needs_eval());
        c.execute_elif(true).unwrap();
        assert!(c.is_active());
    }

    #[test]
    fn else_after_true() {
        let mut c = CondStack::new();
        c.execute_if(true);
        c.execute_else().unwrap();
        assert_eq!(c.peek(), Some(CondState::ElseFalse));
        assert_eq!(c.skip_step(CondCommand::EndIf), SkipStep::ResumeAfter);
        assert!(CondStack::new().execute_endif().is_err());
    }
}
