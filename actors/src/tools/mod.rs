//! Agent tools served by mcpd itself: file tools confined to the project directory, command
//! tools, and the tools of configured remote servers (the gateway); and the resources (project
//! files, declared resources).

pub mod commands;
pub mod files;
pub mod gateway;
pub mod paths;
pub mod resources;
pub mod sets;
