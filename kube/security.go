package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/harness-dev/harness/outcome"
)

// ImageUID is the user the shipped Dockerfile creates: pods run as it.
const ImageUID = 10001

// Seccomp reads --sandbox-profile: runtime-default (the restricted Pod
// Security level; bwrap cannot make its user namespace under it, so
// harness's sandbox is Landlock there) or unconfined (lets bwrap start,
// and is not the restricted level). "" is runtime-default.
func Seccomp(profile string) (corev1.SeccompProfileType, error) {
	switch profile {
	case "", "runtime-default":
		return corev1.SeccompProfileTypeRuntimeDefault, nil
	case "unconfined":
		return corev1.SeccompProfileTypeUnconfined, nil
	}
	return "", outcome.Usage("k8s_sandbox_profile_invalid", "--sandbox-profile %q: give runtime-default or unconfined", profile)
}

// PodSecurity is a pod's security context at the restricted level (with
// the RuntimeDefault profile): the image's own unprivileged user.
func PodSecurity(seccomp corev1.SeccompProfileType) *corev1.PodSecurityContext {
	yes, uid := true, int64(ImageUID)
	return &corev1.PodSecurityContext{
		RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
		SeccompProfile: &corev1.SeccompProfile{Type: seccomp},
	}
}

// ContainerSecurity is a container's security context at the restricted
// level: no way to gain privileges, no capabilities, a read-only root
// file system (the pod mounts an emptyDir at /tmp).
func ContainerSecurity() *corev1.SecurityContext {
	yes, no := true, false
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// Env is what every harness container is given: the API key by reference
// to a Secret (never its value), a base URL when one is set, and a cache
// directory on the writable /tmp. Kubernetes expands $(NAME) in an env
// value as in command and args, so every value is written Literal.
func Env(secret, secretKey, baseURL string) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "HARNESS_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: secretKey}}}}
	if baseURL != "" {
		env = append(env, corev1.EnvVar{Name: "HARNESS_BASE_URL", Value: Literal(baseURL)})
	}
	return append(env, corev1.EnvVar{Name: "XDG_CACHE_HOME", Value: "/tmp/cache"})
}

// Volumes are /runs (the claim named, or an emptyDir that dies with the
// pod) and /tmp, with the mounts of a container.
func Volumes(runsClaim string) ([]corev1.Volume, []corev1.VolumeMount) {
	runs := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if runsClaim != "" {
		runs = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: runsClaim}}
	}
	return []corev1.Volume{
			{Name: "runs", VolumeSource: runs},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}, []corev1.VolumeMount{
			{Name: "runs", MountPath: "/runs"},
			{Name: "tmp", MountPath: "/tmp"},
		}
}
