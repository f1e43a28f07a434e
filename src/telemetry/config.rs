//! The telemetry configuration, read the OpenTelemetry way: the SDK's standard environment
//! variables (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER[_ARG]`, `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_SDK_DISABLED`)
//! plus mcpd's own endpoint setting (`--otlp-endpoint`, `otlpEndpoint`). Telemetry is off unless
//! an endpoint is configured. A value that cannot be used is an error naming its variable, so
//! mcpd refuses to start rather than export somewhere else or not at all.
//!
//! The variables come in through a lookup function: the runtime passes the process environment,
//! tests a map.

use std::time::Duration;

use super::semconv::{DEFAULT_SERVICE_NAME, SERVICE_NAME};

/// `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL (`/v1/traces` and `/v1/metrics` are
/// appended).
pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the full URL spans are posted to.
pub const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: the full URL metrics are posted to.
pub const METRICS_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (default) or `http/json`.
pub const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,…` sent with every export (values percent-decoded).
pub const HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// `OTEL_EXPORTER_OTLP_TIMEOUT`: the time limit of one export request, in milliseconds.
pub const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// `OTEL_SERVICE_NAME`: the resource's `service.name` (default `mcpd`).
pub const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";
/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value,…` resource attributes (values percent-decoded).
pub const RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";
/// `OTEL_TRACES_SAMPLER`: the sampler (default `parentbased_always_on`).
pub const SAMPLER: &str = "OTEL_TRACES_SAMPLER";
/// `OTEL_TRACES_SAMPLER_ARG`: the ratio of the `traceidratio` samplers (default 1.0).
pub const SAMPLER_ARG: &str = "OTEL_TRACES_SAMPLER_ARG";
/// `OTEL_TRACES_EXPORTER`: `otlp` (default) or `none`.
pub const TRACES_EXPORTER: &str = "OTEL_TRACES_EXPORTER";
/// `OTEL_METRICS_EXPORTER`: `otlp` (default) or `none`.
pub const METRICS_EXPORTER: &str = "OTEL_METRICS_EXPORTER";
/// `OTEL_BSP_SCHEDULE_DELAY`: the longest a finished span waits for its batch, in milliseconds.
pub const SCHEDULE_DELAY: &str = "OTEL_BSP_SCHEDULE_DELAY";
/// `OTEL_BSP_MAX_QUEUE_SIZE`: finished spans kept for export; more are dropped and counted.
pub const MAX_QUEUE_SIZE: &str = "OTEL_BSP_MAX_QUEUE_SIZE";
/// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: spans per export request (at most the queue size).
pub const MAX_EXPORT_BATCH_SIZE: &str = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE";
/// `OTEL_METRIC_EXPORT_INTERVAL`: the time between metric exports, in milliseconds.
pub const METRIC_EXPORT_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";
/// `OTEL_SDK_DISABLED`: `true` turns telemetry off whatever else is set.
pub const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

/// The wire format of export requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: `application/x-protobuf` bodies.
    Protobuf,
    /// `http/json`: `application/json` bodies (the OTLP JSON mapping).
    Json,
}

/// Which spans are recorded (the SDK's samplers, by their environment names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerConfig {
    /// `always_on`.
    AlwaysOn,
    /// `always_off`.
    AlwaysOff,
    /// `traceidratio`: this fraction of trace ids, whatever the parent decided.
    TraceIdRatio(f64),
    /// `parentbased_always_on` (the default): the parent's decision, else on.
    ParentBasedAlwaysOn,
    /// `parentbased_always_off`: the parent's decision, else off.
    ParentBasedAlwaysOff,
    /// `parentbased_traceidratio`: the parent's decision, else this fraction of trace ids.
    ParentBasedTraceIdRatio(f64),
}

/// mcpd's own endpoint setting and where it came from (`--otlp-endpoint` or `otlpEndpoint`),
/// named in its error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSetting {
    /// The collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub url: String,
    /// The flag or property it was given by.
    pub source: &'static str,
}

impl EndpointSetting {
    /// The endpoint given by the `--otlp-endpoint` flag, else by the `otlpEndpoint` property
    /// (an empty value counts as unset).
    pub fn pick(flag: Option<&str>, property: Option<&str>) -> Option<EndpointSetting> {
        let given = |value: Option<&str>| value.filter(|v| !v.trim().is_empty()).map(str::to_owned);
        match (given(flag), given(property)) {
            (Some(url), _) => Some(EndpointSetting { url, source: "--otlp-endpoint" }),
            (None, Some(url)) => Some(EndpointSetting { url, source: "otlpEndpoint" }),
            (None, None) => None,
        }
    }
}

/// The telemetry configuration: present only when telemetry is on.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    /// Where spans are posted (`None`: no traces).
    pub traces_endpoint: Option<String>,
    /// Where metrics are posted (`None`: no metrics).
    pub metrics_endpoint: Option<String>,
    /// The body format.
    pub protocol: Protocol,
    /// Headers sent with every export request (names checked, values without CR/LF).
    pub headers: Vec<(String, String)>,
    /// The time limit of one export request.
    pub timeout: Duration,
    /// The resource's attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
    /// The sampler.
    pub sampler: SamplerConfig,
    /// The longest a finished span waits before its batch is sent.
    pub schedule_delay: Duration,
    /// Finished spans waiting for export at most; more are dropped (and counted).
    pub max_queue_size: usize,
    /// Spans per export request at most.
    pub max_export_batch_size: usize,
    /// The time between metric exports.
    pub metric_export_interval: Duration,
}

/// A configuration value that cannot be used, with the variable (or flag) that gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The environment variable, flag or property.
    pub variable: String,
    /// What is wrong with its value.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.variable, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn error(variable: &str, message: impl Into<String>) -> ConfigError {
    ConfigError { variable: variable.to_owned(), message: message.into() }
}

impl TelemetryConfig {
    /// Reads the configuration from the variables `var` gives (an empty value counts as unset)
    /// and mcpd's own endpoint setting, which stands for `OTEL_EXPORTER_OTLP_ENDPOINT` when both
    /// are given. `Ok(None)`: telemetry is off (no endpoint, both exporters `none`, or
    /// `OTEL_SDK_DISABLED=true`).
    pub fn read(
        var: impl Fn(&str) -> Option<String>,
        setting: Option<&EndpointSetting>,
    ) -> Result<Option<TelemetryConfig>, ConfigError> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if let Some(disabled) = get(SDK_DISABLED) {
            match disabled.trim().to_ascii_lowercase().as_str() {
                "true" => return Ok(None),
                "false" => {}
                _ => return Err(error(SDK_DISABLED, format!("`{disabled}` is not true or false"))),
            }
        }
        let base = match setting {
            Some(setting) => Some((setting.url.clone(), setting.source)),
            None => get(ENDPOINT).map(|url| (url, ENDPOINT)),
        };
        let signal = |exporter: &str, own: &str, path: &str| -> Result<_, ConfigError> {
            if !exporter_on(exporter, get(exporter))? {
                return Ok(None);
            }
            if let Some(url) = get(own) {
                return check_url(own, url.trim()).map(Some);
            }
            match &base {
                Some((url, source)) => {
                    check_url(source, url.trim())?;
                    check_url(source, &join(url.trim(), path)).map(Some)
                }
                None => Ok(None),
            }
        };
        let traces_endpoint = signal(TRACES_EXPORTER, TRACES_ENDPOINT, "v1/traces")?;
        let metrics_endpoint = signal(METRICS_EXPORTER, METRICS_ENDPOINT, "v1/metrics")?;
        if traces_endpoint.is_none() && metrics_endpoint.is_none() {
            return Ok(None);
        }
        let protocol = match get(PROTOCOL).as_deref().map(str::trim) {
            None | Some("http/protobuf") => Protocol::Protobuf,
            Some("http/json") => Protocol::Json,
            Some(other) => {
                return Err(error(PROTOCOL, format!("`{other}` is not supported (http/protobuf or http/json)")))
            }
        };
        let headers = match get(HEADERS) {
            Some(list) => pairs(HEADERS, &list)?,
            None => Vec::new(),
        };
        for (name, value) in &headers {
            if !name.bytes().all(is_token_byte) {
                return Err(error(HEADERS, format!("`{name}` is not a header name")));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(error(HEADERS, format!("the value of `{name}` has a line break")));
            }
        }
        let mut resource = match get(RESOURCE_ATTRIBUTES) {
            Some(list) => pairs(RESOURCE_ATTRIBUTES, &list)?,
            None => Vec::new(),
        };
        let service = match get(SERVICE_NAME_VAR) {
            Some(name) => name.trim().to_owned(),
            None => resource
                .iter()
                .find(|(k, _)| k == SERVICE_NAME)
                .map_or_else(|| DEFAULT_SERVICE_NAME.to_owned(), |(_, v)| v.clone()),
        };
        resource.retain(|(k, _)| k != SERVICE_NAME);
        resource.insert(0, (SERVICE_NAME.to_owned(), service));

        let max_queue_size = count(get(MAX_QUEUE_SIZE), MAX_QUEUE_SIZE, 2048)?;
        let max_export_batch_size = count(get(MAX_EXPORT_BATCH_SIZE), MAX_EXPORT_BATCH_SIZE, 512)?;
        if max_export_batch_size > max_queue_size {
            return Err(error(
                MAX_EXPORT_BATCH_SIZE,
                format!("{max_export_batch_size} is more than {MAX_QUEUE_SIZE} ({max_queue_size})"),
            ));
        }
        Ok(Some(TelemetryConfig {
            traces_endpoint,
            metrics_endpoint,
            protocol,
            headers,
            timeout: millis(get(TIMEOUT), TIMEOUT, 10_000)?,
            resource,
            sampler: sampler(get(SAMPLER), get(SAMPLER_ARG))?,
            schedule_delay: millis(get(SCHEDULE_DELAY), SCHEDULE_DELAY, 5_000)?,
            max_queue_size,
            max_export_batch_size,
            metric_export_interval: millis(get(METRIC_EXPORT_INTERVAL), METRIC_EXPORT_INTERVAL, 60_000)?
                .max(Duration::from_millis(1)),
        }))
    }
}

fn exporter_on(variable: &str, value: Option<String>) -> Result<bool, ConfigError> {
    match value.as_deref().map(str::trim) {
        None | Some("otlp") => Ok(true),
        Some("none") => Ok(false),
        Some(other) => Err(error(variable, format!("`{other}` is not supported (otlp or none)"))),
    }
}

/// The base URL joined with a signal's path (`http://host:4318` + `v1/traces`).
fn join(base: &str, path: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{path}")
    } else {
        format!("{base}/{path}")
    }
}

fn check_url(variable: &str, value: &str) -> Result<String, ConfigError> {
    let parsed = url::Url::parse(value).map_err(|e| error(variable, format!("`{value}` is not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(error(variable, format!("`{value}` is not an http:// or https:// URL")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.fragment().is_some() {
        return Err(error(
            variable,
            format!("`{value}` has credentials or a fragment (use {HEADERS} for credentials)"),
        ));
    }
    Ok(parsed.into())
}

fn sampler(name: Option<String>, arg: Option<String>) -> Result<SamplerConfig, ConfigError> {
    let ratio = || -> Result<f64, ConfigError> {
        let Some(arg) = arg.as_deref().map(str::trim) else { return Ok(1.0) };
        match arg.parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
            _ => Err(error(SAMPLER_ARG, format!("`{arg}` is not a ratio from 0 to 1"))),
        }
    };
    Ok(match name.as_deref().map(str::trim) {
        None | Some("parentbased_always_on") => SamplerConfig::ParentBasedAlwaysOn,
        Some("always_on") => SamplerConfig::AlwaysOn,
        Some("always_off") => SamplerConfig::AlwaysOff,
        Some("traceidratio") => SamplerConfig::TraceIdRatio(ratio()?),
        Some("parentbased_always_off") => SamplerConfig::ParentBasedAlwaysOff,
        Some("parentbased_traceidratio") => SamplerConfig::ParentBasedTraceIdRatio(ratio()?),
        Some(other) => {
            return Err(error(
                SAMPLER,
                format!(
                    "`{other}` is not supported (always_on, always_off, traceidratio, \
                     parentbased_always_on, parentbased_always_off, parentbased_traceidratio)"
                ),
            ))
        }
    })
}

fn millis(value: Option<String>, variable: &str, default: u64) -> Result<Duration, ConfigError> {
    let Some(value) = value else { return Ok(Duration::from_millis(default)) };
    value
        .trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| error(variable, format!("`{value}` is not a whole number of milliseconds")))
}

fn count(value: Option<String>, variable: &str, default: usize) -> Result<usize, ConfigError> {
    let Some(value) = value else { return Ok(default) };
    match value.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(error(variable, format!("`{value}` is not a positive whole number"))),
    }
}

/// A `key=value,key=value` list (W3C Baggage-like, as the SDK reads headers and resource
/// attributes): keys trimmed, values trimmed and percent-decoded, empty members skipped.
fn pairs(variable: &str, list: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for member in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let Some((key, value)) = member.split_once('=') else {
            return Err(error(variable, format!("`{member}` is not key=value")));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(error(variable, format!("`{member}` has no key")));
        }
        let value = percent_decode(value.trim())
            .ok_or_else(|| error(variable, format!("the value of `{key}` is not percent-encoded UTF-8")))?;
        out.push((key.to_owned(), value));
    }
    Ok(out)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<TelemetryConfig>, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        TelemetryConfig::read(|name| map.get(name).cloned(), None)
    }

    fn on(vars: &[(&str, &str)]) -> TelemetryConfig {
        read(vars).unwrap().unwrap()
    }

    fn fails(vars: &[(&str, &str)]) -> String {
        read(vars).unwrap_err().to_string()
    }

    #[test]
    fn nothing_configured_is_off() {
        assert_eq!(read(&[]).unwrap(), None);
        assert_eq!(read(&[(ENDPOINT, "")]).unwrap(), None);
        assert_eq!(read(&[(SAMPLER, "always_on"), (SERVICE_NAME_VAR, "x")]).unwrap(), None);
    }

    #[test]
    fn the_base_endpoint_gets_each_signals_path_and_the_defaults() {
        let config = on(&[(ENDPOINT, "http://127.0.0.1:4318")]);
        assert_eq!(config.traces_endpoint.as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
        assert_eq!(config.metrics_endpoint.as_deref(), Some("http://127.0.0.1:4318/v1/metrics"));
        assert_eq!(config.protocol, Protocol::Protobuf);
        assert_eq!(config.sampler, SamplerConfig::ParentBasedAlwaysOn);
        assert_eq!(config.resource, vec![("service.name".to_owned(), "mcpd".to_owned())]);
        assert_eq!(config.schedule_delay, Duration::from_secs(5));
        assert_eq!(config.timeout, Duration::from_secs(10));
        assert_eq!(config.metric_export_interval, Duration::from_secs(60));
        assert_eq!((config.max_queue_size, config.max_export_batch_size), (2048, 512));
        let slash = on(&[(ENDPOINT, "https://collector.example/otlp/")]);
        assert_eq!(slash.traces_endpoint.as_deref(), Some("https://collector.example/otlp/v1/traces"));
    }

    #[test]
    fn a_signals_own_endpoint_is_used_as_given_and_none_turns_a_signal_off() {
        let config = on(&[
            (ENDPOINT, "http://base:4318"),
            (TRACES_ENDPOINT, "http://traces:9999/custom"),
            (METRICS_EXPORTER, "none"),
        ]);
        assert_eq!(config.traces_endpoint.as_deref(), Some("http://traces:9999/custom"));
        assert_eq!(config.metrics_endpoint, None);
        let metrics_only = on(&[(METRICS_ENDPOINT, "http://m:1/v1/metrics")]);
        assert_eq!(metrics_only.traces_endpoint, None);
        assert_eq!(
            read(&[(ENDPOINT, "http://b:1"), (TRACES_EXPORTER, "none"), (METRICS_EXPORTER, "none")]).unwrap(),
            None
        );
    }

    #[test]
    fn the_flag_or_property_stands_for_the_base_endpoint() {
        let setting = EndpointSetting { url: "http://flag:4318".into(), source: "--otlp-endpoint" };
        let env = |name: &str| (name == ENDPOINT).then(|| "http://env:4318".to_owned());
        let config = TelemetryConfig::read(env, Some(&setting)).unwrap().unwrap();
        assert_eq!(config.traces_endpoint.as_deref(), Some("http://flag:4318/v1/traces"));
        let picked = EndpointSetting::pick(Some("http://flag:1"), Some("http://prop:1")).unwrap();
        assert_eq!((picked.url.as_str(), picked.source), ("http://flag:1", "--otlp-endpoint"));
        let picked = EndpointSetting::pick(Some(" "), Some("http://prop:1")).unwrap();
        assert_eq!((picked.url.as_str(), picked.source), ("http://prop:1", "otlpEndpoint"));
        assert_eq!(EndpointSetting::pick(None, None), None);
        let bad = EndpointSetting { url: "collector:4318".into(), source: "otlpEndpoint" };
        let err = TelemetryConfig::read(|_| None, Some(&bad)).unwrap_err();
        assert_eq!(err.variable, "otlpEndpoint");
    }

    #[test]
    fn disabled_wins_over_everything() {
        assert_eq!(read(&[(ENDPOINT, "http://a:1"), (SDK_DISABLED, "TRUE")]).unwrap(), None);
        assert_eq!(read(&[(ENDPOINT, "not a url"), (SDK_DISABLED, "true")]).unwrap(), None);
        assert!(on(&[(ENDPOINT, "http://a:1"), (SDK_DISABLED, "false")]).traces_endpoint.is_some());
        assert_eq!(fails(&[(SDK_DISABLED, "yes")]), "OTEL_SDK_DISABLED: `yes` is not true or false");
    }

    #[test]
    fn samplers_by_their_environment_names() {
        let with = |name: &str, arg: Option<&str>| {
            let mut vars = vec![(ENDPOINT, "http://a:1"), (SAMPLER, name)];
            if let Some(arg) = arg {
                vars.push((SAMPLER_ARG, arg));
            }
            on(&vars).sampler
        };
        assert_eq!(with("always_on", None), SamplerConfig::AlwaysOn);
        assert_eq!(with("always_off", None), SamplerConfig::AlwaysOff);
        assert_eq!(with("traceidratio", Some("0.25")), SamplerConfig::TraceIdRatio(0.25));
        assert_eq!(with("traceidratio", None), SamplerConfig::TraceIdRatio(1.0));
        assert_eq!(with("parentbased_always_off", None), SamplerConfig::ParentBasedAlwaysOff);
        assert_eq!(with("parentbased_traceidratio", Some("0.01")), SamplerConfig::ParentBasedTraceIdRatio(0.01));
        assert_eq!(
            fails(&[(ENDPOINT, "http://a:1"), (SAMPLER, "sometimes")]),
            "OTEL_TRACES_SAMPLER: `sometimes` is not supported (always_on, always_off, \
             traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)"
        );
        assert_eq!(
            fails(&[(ENDPOINT, "http://a:1"), (SAMPLER, "traceidratio"), (SAMPLER_ARG, "1.5")]),
            "OTEL_TRACES_SAMPLER_ARG: `1.5` is not a ratio from 0 to 1"
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        let base = (ENDPOINT, "http://a:1");
        assert_eq!(
            fails(&[(ENDPOINT, "ftp://a:1")]),
            "OTEL_EXPORTER_OTLP_ENDPOINT: `ftp://a:1` is not an http:// or https:// URL"
        );
        assert!(
            fails(&[(TRACES_ENDPOINT, "nope")]).starts_with("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `nope` is not a URL")
        );
        assert_eq!(
            fails(&[base, (PROTOCOL, "grpc")]),
            "OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` is not supported (http/protobuf or http/json)"
        );
        assert_eq!(fails(&[base, (HEADERS, "a=1,b")]), "OTEL_EXPORTER_OTLP_HEADERS: `b` is not key=value");
        assert_eq!(fails(&[base, (HEADERS, "a b=1")]), "OTEL_EXPORTER_OTLP_HEADERS: `a b` is not a header name");
        assert_eq!(
            fails(&[base, (SCHEDULE_DELAY, "5s")]),
            "OTEL_BSP_SCHEDULE_DELAY: `5s` is not a whole number of milliseconds"
        );
        assert_eq!(
            fails(&[base, (METRIC_EXPORT_INTERVAL, "-1")]),
            "OTEL_METRIC_EXPORT_INTERVAL: `-1` is not a whole number of milliseconds"
        );
        assert_eq!(
            fails(&[base, (MAX_QUEUE_SIZE, "0")]),
            "OTEL_BSP_MAX_QUEUE_SIZE: `0` is not a positive whole number"
        );
        assert_eq!(
            fails(&[base, (MAX_QUEUE_SIZE, "100")]),
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 512 is more than OTEL_BSP_MAX_QUEUE_SIZE (100)"
        );
        assert_eq!(
            fails(&[base, (TRACES_EXPORTER, "zipkin")]),
            "OTEL_TRACES_EXPORTER: `zipkin` is not supported (otlp or none)"
        );
        assert_eq!(
            fails(&[base, (RESOURCE_ATTRIBUTES, "a=%zz")]),
            "OTEL_RESOURCE_ATTRIBUTES: the value of `a` is not percent-encoded UTF-8"
        );
    }

    #[test]
    fn headers_and_resource_attributes_are_decoded_and_service_name_comes_first() {
        let config = on(&[
            (ENDPOINT, "http://a:1"),
            (PROTOCOL, "http/json"),
            (HEADERS, " authorization = Basic%20abc , x-tenant=t1,"),
            (RESOURCE_ATTRIBUTES, "deployment.environment=prod,service.name=from-attrs"),
            (SCHEDULE_DELAY, "200"),
        ]);
        assert_eq!(config.protocol, Protocol::Json);
        assert_eq!(
            config.headers,
            vec![("authorization".into(), "Basic abc".into()), ("x-tenant".into(), "t1".into())]
        );
        assert_eq!(
            config.resource,
            vec![("service.name".into(), "from-attrs".into()), ("deployment.environment".into(), "prod".into())]
        );
        assert_eq!(config.schedule_delay, Duration::from_millis(200));
        let named =
            on(&[(ENDPOINT, "http://a:1"), (SERVICE_NAME_VAR, "gateway-eu"), (RESOURCE_ATTRIBUTES, "service.name=x")]);
        assert_eq!(named.resource, vec![("service.name".into(), "gateway-eu".into())]);
    }
}
