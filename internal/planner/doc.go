// Package planner turns a revision's render into an apply plan. It is the
// one pipeline the BundleDeployment controller and rukpakctl diff build
// plans with, so that what rukpakctl shows is what the manager applies;
// it is where rukpak's API meets the apply engine, which knows nothing of
// it (EngineOptions: the field manager, the owner kind, the label and
// annotation keys).
//
// # The pipeline
//
// Plan takes the objects a revision's format rendered (rendering is the
// caller's: the controller renders as the install identity and keeps
// renders that must not change, rukpakctl renders as its user) and, in
// order:
//
//  1. fills in the serving certificates and CA bundles the objects ask
//     for (FillCerts, with package servingcert), keeping the live
//     certificate Secrets while they are good;
//  2. prepares them with the apply engine (apply.Engine.Prepare): places
//     namespaced objects in the install namespace, labels them as the
//     BundleDeployment's, refuses duplicates and kinds nothing serves,
//     and orders them;
//  3. applies the drift ignore rules: spec.driftIgnore (IgnoreRules) and
//     the replicas of every HorizontalPodAutoscaler's scale target
//     (apply.Plan.AutoscalerRules).
//
// The plan it returns is a value: how it is applied (a dry-run first,
// the collision rules, which hooks run) is each caller's
// apply.ApplyOptions.
package planner
