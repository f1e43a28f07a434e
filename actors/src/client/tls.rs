//! TLS for `https://` remotes: rustls with the ring provider, Mozilla's root certificates
//! (`webpki-roots`) and, when the `SSL_CERT_FILE` environment variable names a PEM file, the
//! certificates in it as well (a private CA). Built once per process.

use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

/// The TLS configuration every connection shares; `None` when it cannot be built (then
/// `https://` fails to connect with awc's "SSL is not supported").
pub(crate) fn client_config() -> Option<Arc<ClientConfig>> {
    static CONFIG: OnceLock<Option<Arc<ClientConfig>>> = OnceLock::new();
    CONFIG.get_or_init(build).clone()
}

fn build() -> Option<Arc<ClientConfig>> {
    let mut roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
        let shown = std::path::Path::new(&path).display().to_string();
        match CertificateDer::pem_file_iter(&path) {
            Ok(certs) => {
                let (mut added, mut bad) = (0, 0);
                for cert in certs {
                    match cert.map_err(|e| e.to_string()).and_then(|c| roots.add(c).map_err(|e| e.to_string())) {
                        Ok(()) => added += 1,
                        Err(e) => {
                            bad += 1;
                            log::warn!("SSL_CERT_FILE {shown}: skipped a certificate: {e}");
                        }
                    }
                }
                log::debug!("SSL_CERT_FILE {shown}: {added} certificates trusted, {bad} skipped");
            }
            Err(e) => log::warn!("SSL_CERT_FILE {shown} cannot be read: {e}"),
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = match ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions() {
        Ok(builder) => builder,
        Err(e) => {
            log::error!("TLS is unavailable: {e}");
            return None;
        }
    };
    let mut config = builder.with_root_certificates(roots).with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Some(Arc::new(config))
}
