package catalyst

import (
	corev1 "k8s.io/api/core/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// BuildPodTemplate is the pod template of a build Job of engine (with git and registry
// credentials), for the end-to-end tests that ask the API server's Pod Security admission about it.
func BuildPodTemplate(engine catalystv1alpha1.BuildEngine) (corev1.PodTemplateSpec, error) {
	p := testProject(func(p *catalystv1alpha1.Project) { p.Spec.Build.Engine = engine })
	img := DefaultKanikoImage
	if engine == catalystv1alpha1.BuildEngineBuildKit {
		img = DefaultBuildKitImage
	}
	job, err := newBuildJob(buildRequest{
		env: testEnv(), project: p, namespace: DefaultBuildNamespace, image: p.Spec.Registry.Repository + ":" + testSHA,
		commit: testSHA, branch: "main", engineImg: img, hash: buildHash(p, img), helperImg: DefaultBuildHelperImage,
		gitKeys: []string{gitPasswordKey, gitUsernameKey}, hasDocker: true,
		resources: defaultBuildResources(), repository: p.Spec.Source.RepositoryURL,
	})
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	return job.Spec.Template, nil
}

// BuildNamespaceRefusal is buildNamespaceRefusal, for the same tests.
var BuildNamespaceRefusal = buildNamespaceRefusal

// BuildJobName is the name of the build Job (and of its Secret) of env for image, with the
// Project's build settings and engine image.
func BuildJobName(env *catalystv1alpha1.Environment, image string, project *catalystv1alpha1.Project, engineImage string) string {
	return buildJobName(env, image, buildHash(project, engineImage))
}

// PolicyParams is policyParams: the admission parameters the operator writes on an environment
// namespace, for the tests that attack the admission policies.
var PolicyParams = policyParams
