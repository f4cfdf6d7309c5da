// Package otlp maps OpenTelemetry spans to canonical traces.
package otlp
