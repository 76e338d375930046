// Package bundle reconciles Bundles: it unpacks each Bundle's (pinned or
// floating) sources into the content store once, reports the content digest
// and object count in the status, and removes the content from the store
// when the last Bundle using it is deleted.
package bundle
