//! `source.toolkit.fluxcd.io`: where appliers' manifests and charts come from.

mod bucket;
mod external_artifact;
mod git;
mod helm_repository;
mod oci;

pub use bucket::{Bucket, BucketSpec, BucketStatus, BucketSts};
pub use external_artifact::{ExternalArtifact, ExternalArtifactSpec, ExternalArtifactStatus};
pub use git::{
    ArtifactV1beta1, GitProvider, GitRepository, GitRepositoryInclude, GitRepositoryRef, GitRepositorySpec,
    GitRepositorySpecV1beta1, GitRepositorySpecV1beta2, GitRepositoryStatus, GitRepositoryStatusV1beta1,
    GitRepositoryStatusV1beta2, GitRepositoryV1beta1, GitRepositoryV1beta2, GitRepositoryVerification,
    GitRepositoryVerificationV1beta2, GitVerificationMode,
};
pub use helm_repository::{HelmRepository, HelmRepositorySpec, HelmRepositoryStatus};
pub use oci::{
    OciLayerSelector, OciRepository, OciRepositoryRef, OciRepositorySpec, OciRepositorySpecV1beta2,
    OciRepositoryStatus, OciRepositoryStatusV1beta2, OciRepositoryV1beta2, OciRepositoryVerification,
    OidcIdentityMatch,
};

/// The API group.
pub const GROUP: &str = "source.toolkit.fluxcd.io";
