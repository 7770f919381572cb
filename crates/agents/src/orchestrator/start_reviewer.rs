//! The packet reviewer of `start` runs: the reviewer role's agent, as in `git orchestra run`,
//! but talking through the run's journaled models, so a resumed run replays finished review
//! turns, review tokens count against the budget, and a spent budget stops reviews too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::models::RoleModels;
use super::replay::Replaying;
use crate::agent::tools::Registry;
use crate::agent::{REVIEWER_ROLE, ReviewAgent};
use orchestra_core::gate::{
    CompareInput, Comparison, GateError, ReviewInput, ReviewOutcome, Reviewer,
};
use orchestra_core::llm::{ChatModel, RetryPolicy};

/// Reviews validated packets with the reviewer role's model.
pub struct StartReviewer {
    models: Arc<RoleModels>,
    name: String,
    /// The reviewer role's tools.
    registry: Registry,
    /// Set when the budget runs out, to stop the run (the packet is reviewed on resume).
    halt: Arc<AtomicBool>,
}

impl StartReviewer {
    /// Returns a reviewer when the reviewer role has a usable model, `None` otherwise (the
    /// packet pipeline then ends at validation, and the merge gates still apply).
    pub fn new(models: Arc<RoleModels>, halt: Arc<AtomicBool>) -> Option<StartReviewer> {
        models.check(REVIEWER_ROLE).ok()?;
        let (_, chain) = models.clients(REVIEWER_ROLE).ok()?;
        let name = format!("{REVIEWER_ROLE}:{}", chain.first()?.label());
        let registry = Registry::builtin().for_role(models.roles.get(REVIEWER_ROLE).ok()?);
        Some(StartReviewer {
            models,
            name,
            registry,
            halt,
        })
    }

    fn fail(&self, message: impl std::fmt::Display) -> GateError {
        GateError::Reviewer {
            reviewer: self.name.clone(),
            message: message.to_string(),
        }
    }
}

impl Reviewer for StartReviewer {
    fn name(&self) -> &str {
        &self.name
    }

    fn review(&self, input: &ReviewInput<'_>) -> Result<ReviewOutcome, GateError> {
        let role = self
            .models
            .roles
            .get(REVIEWER_ROLE)
            .map_err(|e| self.fail(e))?;
        let (clients, chain) = self
            .models
            .clients(REVIEWER_ROLE)
            .map_err(|e| self.fail(e))?;
        let guard = || self.models.budget_exceeded(Some(REVIEWER_ROLE));
        let wrapped: Vec<Replaying<'_>> = clients
            .iter()
            .map(|m| {
                Replaying::new(m.as_ref(), self.models.journal().clone(), REVIEWER_ROLE)
                    .with_guard(&guard)
            })
            .collect();
        let reviewed = ReviewAgent {
            name: &self.name,
            role,
            registry: &self.registry,
            models: wrapped.iter().map(|m| m as &dyn ChatModel).collect(),
            context_tokens: chain.first().map_or(32_000, |p| p.context_tokens),
            policy: RetryPolicy::default(),
            launcher: std::env::current_exe().ok(),
        }
        .review(input);
        if reviewed.is_err() && guard().is_some() {
            // Out of budget, not a failed review: stop cleanly and review again on resume.
            self.halt.store(true, Ordering::SeqCst);
        }
        reviewed
    }

    fn compare(&self, input: &CompareInput<'_>) -> Result<Option<Comparison>, GateError> {
        let (clients, chain) = self
            .models
            .clients(REVIEWER_ROLE)
            .map_err(|e| self.fail(e))?;
        let guard = || self.models.budget_exceeded(Some(REVIEWER_ROLE));
        let wrapped: Vec<Replaying<'_>> = clients
            .iter()
            .map(|m| {
                Replaying::new(m.as_ref(), self.models.journal().clone(), REVIEWER_ROLE)
                    .with_guard(&guard)
            })
            .collect();
        let compared = crate::agent::compare::Comparer {
            name: &self.name,
            models: wrapped.iter().map(|m| m as &dyn ChatModel).collect(),
            policy: RetryPolicy::default(),
            prices: chain.iter().map(|p| self.models.price(&p.model)).collect(),
            keys: chain
                .iter()
                .filter_map(|p| p.api_key().ok().flatten())
                .collect(),
        }
        .compare(input);
        if compared.is_err() && guard().is_some() {
            self.halt.store(true, Ordering::SeqCst);
        }
        compared.map(Some)
    }
}
