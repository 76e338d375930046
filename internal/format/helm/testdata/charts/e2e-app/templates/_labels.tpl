{{- define "e2e-app.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
example.com/tier: {{ .Values.tier | quote }}
{{- end }}
