//! The tools `mcpd serve` exposes, assembled from its tool sets (built-in, file, command and
//! declared tools; the gateway adds its remotes' tools at run time) and filtered by
//! `enabledTools`, and the report of what is exposed: the status JSON's `projectDir`,
//! `project`, `toolSets`, `remotes` and `resources`, and the `mcpd_tools_exposed` / `mcpd_remote_*` /
//! `mcpd_resources_*` gauges.
//!
//! Declared prompts (`prompts`, filtered by `enabledPrompts`) are assembled here too, and
//! counted beside the tools: the status JSON's `prompts` and the `mcpd_prompts_exposed` gauge.
//!
//! An embedder builds the same server as the binary with [`assemble`] and shows the same status
//! with [`ToolReport::install`]. Nothing here reads flags, files or the environment.

use std::path::Path;
use std::sync::Arc;

use mcpd::config::ToolFilter;
use mcpd::Catalog;
use serde_json::{json, Map, Value};

use super::commands::{self, CommandOptions, CommandTools, DeclaredTool};
use super::files::{self, FileToolOptions};
use super::gateway::Gateway;
use super::paths::ProjectRoot;
use super::prompts::{self, DeclaredPrompt, PromptOptions};
use super::reach::ProjectReach;
use super::resources::{FileWatch, ResourceCounts};
use crate::metrics::GaugeSample;
use crate::runtime::{Mcpd, RuntimeError};

/// A set of tools, as the status JSON and the `set` label of `mcpd_tools_exposed` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSet {
    /// `echo`, `time`.
    Builtin,
    /// The project-confined file tools.
    Files,
    /// `run_command` and `read_command_log`.
    Commands,
    /// Config-declared command tools (`--tools FILE`).
    Declared,
    /// Remote servers' tools (`--servers FILE`).
    Gateway,
}

impl ToolSet {
    /// The set's name in the status JSON and the metrics.
    pub const fn label(self) -> &'static str {
        match self {
            ToolSet::Builtin => "builtin",
            ToolSet::Files => "files",
            ToolSet::Commands => "commands",
            ToolSet::Declared => "declared",
            ToolSet::Gateway => "gateway",
        }
    }
}

/// Which local tool sets to build.
#[derive(Debug, Clone, Default)]
pub struct ToolSetOptions {
    /// The file tools (none: not offered at all).
    pub files: Option<FileToolOptions>,
    /// `run_command` and its limits.
    pub commands: CommandOptions,
    /// Declared command tools.
    pub declared: Vec<DeclaredTool>,
    /// Declared prompts, their limits and `enabledPrompts`.
    pub prompts: PromptSetOptions,
}

/// Which declared prompts to serve.
#[derive(Debug, Clone, Default)]
pub struct PromptSetOptions {
    /// The declared prompts.
    pub declared: Vec<DeclaredPrompt>,
    /// Their limits.
    pub options: PromptOptions,
    /// `enabledPrompts` (same patterns as `enabledTools`); none: every prompt.
    pub filter: Option<ToolFilter>,
}

/// The assembled catalog and how many tools of each local set it exposes (after the filter).
#[derive(Debug)]
pub struct ToolSets {
    /// The tools to serve.
    pub catalog: Catalog,
    /// Exposed tools per local set, in the order of [`ToolSet`] (the gateway is counted live).
    pub exposed: Vec<(ToolSet, usize)>,
    /// Exposed declared prompts (after `enabledPrompts`).
    pub prompts: usize,
    /// The command tools, to replace the declared ones when the tools file changes.
    pub commands: CommandTools,
}

/// Builds the catalog: built-in tools, then the file tools, then the command and declared tools,
/// all confined to `root`; then keeps only what `filter` allows.
pub fn assemble(root: &ProjectRoot, options: ToolSetOptions, filter: &ToolFilter) -> ToolSets {
    let mut catalog = Catalog::new();
    let mut origin: Vec<(ToolSet, String)> = Vec::new();
    let mut mark = |catalog: &Catalog, set: ToolSet| {
        let new: Vec<String> = catalog
            .tools()
            .map(|entry| entry.definition.name.clone())
            .filter(|name| !origin.iter().any(|(_, known)| known == name))
            .collect();
        origin.extend(new.into_iter().map(|name| (set, name)));
    };
    mcpd::builtin::register(&mut catalog);
    mark(&catalog, ToolSet::Builtin);
    if let Some(file_options) = options.files {
        files::register(&mut catalog, root.clone(), file_options);
    }
    mark(&catalog, ToolSet::Files);
    let declared: Vec<String> = options.declared.iter().map(|tool| tool.name.clone()).collect();
    let PromptSetOptions { declared: declared_prompts, options: prompt_options, filter: prompt_filter } =
        options.prompts;
    let declared_prompts: Vec<DeclaredPrompt> = declared_prompts
        .into_iter()
        .filter(|prompt| prompt_filter.as_ref().is_none_or(|f| f.allows(&prompt.name)))
        .collect();
    let prompts =
        prompts::register(&mut catalog, root.clone(), options.commands.clone(), prompt_options, declared_prompts);
    let commands = commands::register(&mut catalog, root.clone(), options.commands, options.declared);
    mark(&catalog, ToolSet::Commands);
    let mut exposed: Vec<(ToolSet, usize)> =
        [ToolSet::Builtin, ToolSet::Files, ToolSet::Commands, ToolSet::Declared].map(|set| (set, 0)).to_vec();
    for (set, name) in origin.iter().filter(|(_, name)| filter.allows(name)) {
        let set = if *set == ToolSet::Commands && declared.contains(name) { ToolSet::Declared } else { *set };
        if let Some(entry) = exposed.iter_mut().find(|(s, _)| *s == set) {
            entry.1 += 1;
        }
    }
    catalog.retain_tools(|name| filter.allows(name));
    ToolSets { catalog, exposed, prompts, commands }
}

/// What the status JSON and `/metrics` say about the tools (and declared prompts); the
/// gateway's part is read live.
#[derive(Debug, Clone)]
pub struct ToolReport {
    exposed: Vec<(ToolSet, usize)>,
    prompts: usize,
    project_dir: String,
    gateway: Option<Arc<Gateway>>,
    resources: Option<(ResourceCounts, Arc<FileWatch>)>,
    project: Option<ProjectReach>,
}

impl ToolReport {
    /// A report of `exposed` (from [`assemble`]) and, when there is one, the gateway.
    pub fn new(exposed: Vec<(ToolSet, usize)>, project_dir: &Path, gateway: Option<Arc<Gateway>>) -> Self {
        let project_dir = project_dir.display().to_string();
        ToolReport { exposed, prompts: 0, project_dir, gateway, resources: None, project: None }
    }

    /// Adds what callers can reach of the project: the status JSON's `project`.
    #[must_use]
    pub fn with_project(mut self, reach: ProjectReach) -> Self {
        self.project = Some(reach);
        self
    }

    /// Adds the resources (from [`super::resources::register`]): the status JSON's `resources`
    /// (`files`, `templates`, `declared`, `watched`) and `mcpd_resources_exposed{set}` /
    /// `mcpd_resources_watched`.
    #[must_use]
    pub fn with_resources(mut self, counts: ResourceCounts, watch: Arc<FileWatch>) -> Self {
        self.resources = Some((counts, watch));
        self
    }

    fn resource_sets(&self) -> Vec<(&'static str, usize)> {
        self.resources.as_ref().map_or_else(Vec::new, |(counts, _)| {
            vec![("files", counts.files), ("templates", counts.templates), ("declared", counts.declared)]
        })
    }

    /// Adds the declared prompts exposed ([`ToolSets::prompts`]).
    #[must_use]
    pub fn with_prompts(mut self, declared: usize) -> Self {
        self.prompts = declared;
        self
    }

    /// The status JSON's `projectDir`, `toolSets` (with `gateway`), `prompts`, `remotes` and (with
    /// a gateway) `serversFile`.
    pub fn status_json(&self) -> Value {
        let remotes = self.gateway.as_ref().map_or_else(|| json!([]), |gateway| gateway.health_json());
        let mut tool_sets: Map<String, Value> =
            self.exposed.iter().map(|(set, n)| (set.label().to_owned(), json!(n))).collect();
        tool_sets.insert(ToolSet::Gateway.label().into(), json!(self.gateway_tools()));
        let mut status = json!({ "projectDir": self.project_dir, "toolSets": tool_sets, "remotes": remotes });
        status["prompts"] = json!({ "declared": self.prompts });
        if let Some(gateway) = &self.gateway {
            status["serversFile"] = gateway.file_json();
        }
        if let Some(project) = &self.project {
            status["project"] = project.status_json();
        }
        if let Some((_, watch)) = &self.resources {
            let mut resources: Map<String, Value> =
                self.resource_sets().into_iter().map(|(set, n)| (set.to_owned(), json!(n))).collect();
            resources.insert("watched".into(), json!(watch.watched()));
            status["resources"] = Value::Object(resources);
        }
        status
    }

    /// `mcpd_tools_exposed{set}` (the gateway's only when there is one),
    /// `mcpd_prompts_exposed{set="declared"}`, `mcpd_remote_up` and `mcpd_remote_tools` per remote.
    pub fn gauges(&self) -> Vec<GaugeSample> {
        let exposed = |set: ToolSet, n: usize| GaugeSample {
            name: "mcpd_tools_exposed",
            help: "Tools exposed per tool set",
            labels: vec![("set", set.label().to_owned())],
            value: n as i64,
        };
        let mut samples: Vec<GaugeSample> = self.exposed.iter().map(|(set, n)| exposed(*set, *n)).collect();
        samples.push(GaugeSample {
            name: "mcpd_prompts_exposed",
            help: "Prompts exposed per set",
            labels: vec![("set", "declared".to_owned())],
            value: self.prompts as i64,
        });
        for (set, n) in self.resource_sets() {
            samples.push(GaugeSample {
                name: "mcpd_resources_exposed",
                help: "Resources exposed per kind (listed project files, templates, declared)",
                labels: vec![("set", set.to_owned())],
                value: n as i64,
            });
        }
        if let Some((_, watch)) = &self.resources {
            samples.push(GaugeSample {
                name: "mcpd_resources_watched",
                help: "Subscribed project files watched for changes",
                labels: Vec::new(),
                value: watch.watched() as i64,
            });
        }
        if let Some(gateway) = &self.gateway {
            let health = gateway.health();
            samples.push(exposed(ToolSet::Gateway, health.iter().map(|h| h.tools).sum()));
            for remote in health {
                samples.push(GaugeSample {
                    name: "mcpd_remote_up",
                    help: "Whether the last contact with a remote server succeeded",
                    labels: vec![("server", remote.name.clone()), ("transport", remote.transport.clone())],
                    value: i64::from(remote.up),
                });
                samples.push(GaugeSample {
                    name: "mcpd_remote_tools",
                    help: "Tools re-exported from a remote server",
                    labels: vec![("server", remote.name)],
                    value: remote.tools as i64,
                });
            }
        }
        samples
    }

    fn gateway_tools(&self) -> usize {
        self.gateway.as_ref().map_or(0, |gateway| gateway.health().iter().map(|h| h.tools).sum())
    }

    /// Adds the report to `runtime`'s status JSON and `/metrics`; call before [`Mcpd::start`].
    ///
    /// # Errors
    /// When the runtime's listener is gone.
    pub async fn install(self, runtime: &Mcpd) -> Result<(), RuntimeError> {
        let status = self.clone();
        runtime.set_status_extras(Arc::new(move || status.status_json())).await?;
        if let Some(gateway) = &self.gateway {
            runtime.metrics().add_collector(Box::new(gateway.remote_metrics()));
        }
        runtime.metrics().set_gauges(Arc::new(move || self.gauges()));
        Ok(())
    }
}
