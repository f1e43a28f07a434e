//! Agent tools served by mcpd itself: file tools confined to the project directory, command
//! tools, the tools of configured remote servers (the gateway), declared prompts, and the
//! resources (project files, declared resources).

pub mod commands;
pub mod deny;
pub mod files;
pub mod gateway;
pub mod paths;
pub mod prompts;
pub mod reach;
pub mod remote_metrics;
pub mod resources;
pub mod sets;
