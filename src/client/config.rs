//! Client server configuration (filled in below).
