package kubeapi

import (
	"encoding/json"
	"fmt"
	"time"
)

// The objects below are written as the components that own them write them: fields a kubelet,
// the scheduler or a ReplicaSet controller set, at their usual sizes, so the values kube-apiserver
// stores (protobuf, with the managed fields it adds) are the size they are in a real cluster.

type obj = map[string]any

func microTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
func rfc3339(t time.Time) string   { return t.UTC().Format(time.RFC3339) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of strings, numbers and lists: cannot fail
	}
	return b
}

// nodeConditions are the five a kubelet reports, all with the heartbeat at now.
func nodeConditions(now time.Time) []obj {
	cond := func(typ, status, reason, msg string) obj {
		return obj{"type": typ, "status": status, "reason": reason, "message": msg,
			"lastHeartbeatTime": rfc3339(now), "lastTransitionTime": "2026-01-01T00:00:00Z"}
	}
	return []obj{
		cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
	}
}

// nodeImages is the image list a node carries (kubelet reports up to 50; a node running a
// dozen workloads has about that many).
func nodeImages() []obj {
	var imgs []obj
	for i := 0; i < 24; i++ {
		imgs = append(imgs, obj{
			"names": []string{
				fmt.Sprintf("registry.example/team-%02d/service@sha256:%064x", i, i*7919),
				fmt.Sprintf("registry.example/team-%02d/service:v1.%d.0", i, i),
			},
			"sizeBytes": 40_000_000 + i*1_250_000,
		})
	}
	return imgs
}

func nodeObject(name string, i int, now time.Time) []byte {
	return mustJSON(obj{
		"apiVersion": "v1", "kind": "Node",
		"metadata": obj{"name": name, "labels": obj{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "n2-standard-8", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%c", 'a'+i%3),
			"topology.kubernetes.io/region": "region-1",
		}, "annotations": obj{
			"node.alpha.kubernetes.io/ttl":                           "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		}},
		"spec": obj{"podCIDR": fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), "podCIDRs": []string{fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
			"providerID": "example://region-1/" + name},
		"status": nodeStatus(name, i, now),
	})
}

func nodeStatus(name string, i int, now time.Time) obj {
	res := obj{"cpu": "8", "memory": "32880000Ki", "pods": "110", "ephemeral-storage": "101000000Ki", "hugepages-2Mi": "0"}
	return obj{
		"capacity": res, "allocatable": res,
		"conditions":      nodeConditions(now),
		"addresses":       []obj{{"type": "InternalIP", "address": fmt.Sprintf("10.0.%d.%d", i/250, 2+i%250)}, {"type": "Hostname", "address": name}},
		"daemonEndpoints": obj{"kubeletEndpoint": obj{"Port": 10250}},
		"nodeInfo": obj{"machineID": fmt.Sprintf("%032x", i), "systemUUID": fmt.Sprintf("%032x", i+1), "bootID": fmt.Sprintf("%032x", i+2),
			"kernelVersion": "6.1.0-30-amd64", "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://2.1.0",
			"kubeletVersion": Version, "kubeProxyVersion": Version, "operatingSystem": "linux", "architecture": "amd64"},
		"images": nodeImages(),
	}
}

// nodeStatusPatch is what a kubelet sends each status report: the conditions, heartbeat renewed.
func nodeStatusPatch(now time.Time) []byte {
	return mustJSON(obj{"status": obj{"conditions": nodeConditions(now)}})
}

func leaseObject(node, uid string, now time.Time) []byte {
	return mustJSON(obj{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": obj{"name": node, "namespace": "kube-node-lease",
			"ownerReferences": []obj{{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}}},
		"spec": obj{"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": microTime(now)},
	})
}

// podObject is a Deployment's pod as its ReplicaSet controller creates it.
func podObject(ns, name, app string) []byte {
	env := []obj{}
	for _, k := range []string{"LOG_LEVEL", "LISTEN_ADDR", "UPSTREAM_URL", "CACHE_SIZE", "FEATURE_FLAGS"} {
		env = append(env, obj{"name": k, "value": "value-of-" + k})
	}
	env = append(env, obj{"name": "POD_NAME", "valueFrom": obj{"fieldRef": obj{"fieldPath": "metadata.name"}}})
	probe := func(path string) obj {
		return obj{"httpGet": obj{"path": path, "port": 8080}, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3}
	}
	return mustJSON(obj{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": obj{"name": name, "namespace": ns,
			"labels":          obj{"app": app, "pod-template-hash": "5d8f7c9b6d", "tier": "backend"},
			"annotations":     obj{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			"ownerReferences": []obj{{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app + "-5d8f7c9b6d", "uid": "00000000-0000-4000-8000-" + fmt.Sprintf("%012x", len(app)), "controller": true, "blockOwnerDeletion": true}}},
		"spec": obj{
			"containers": []obj{{
				"name": app, "image": "registry.example/team/" + app + ":v1.4.2",
				"ports":          []obj{{"containerPort": 8080, "name": "http"}, {"containerPort": 9090, "name": "metrics"}},
				"env":            env,
				"resources":      obj{"requests": obj{"cpu": "100m", "memory": "128Mi"}, "limits": obj{"memory": "256Mi"}},
				"livenessProbe":  probe("/healthz"),
				"readinessProbe": probe("/ready"),
				"volumeMounts":   []obj{{"name": "config", "mountPath": "/etc/" + app}},
			}},
			"volumes":                       []obj{{"name": "config", "configMap": obj{"name": app + "-config"}}},
			"terminationGracePeriodSeconds": 30,
		},
	})
}

func bindingObject(name, node string) []byte {
	return mustJSON(obj{"apiVersion": "v1", "kind": "Binding", "metadata": obj{"name": name},
		"target": obj{"apiVersion": "v1", "kind": "Node", "name": node}})
}

// podStatusPatch is a kubelet's status report of a pod in phase ("Pending" while its containers
// are created, "Running", "Succeeded" once they were stopped).
func podStatusPatch(app, node, podIP string, phase string, now time.Time) []byte {
	ready := "False"
	state := obj{"waiting": obj{"reason": "ContainerCreating"}}
	switch phase {
	case "Running":
		ready = "True"
		state = obj{"running": obj{"startedAt": rfc3339(now)}}
	case "Succeeded":
		state = obj{"terminated": obj{"exitCode": 0, "reason": "Completed", "startedAt": rfc3339(now.Add(-time.Minute)), "finishedAt": rfc3339(now)}}
	}
	cond := func(typ string, status string) obj {
		return obj{"type": typ, "status": status, "lastTransitionTime": rfc3339(now)}
	}
	return mustJSON(obj{"status": obj{
		"phase":      phase,
		"conditions": []obj{cond("PodReadyToStartContainers", "True"), cond("Initialized", "True"), cond("Ready", ready), cond("ContainersReady", ready), cond("PodScheduled", "True")},
		"hostIP":     "10.0.0.2", "hostIPs": []obj{{"ip": "10.0.0.2"}},
		"podIP": podIP, "podIPs": []obj{{"ip": podIP}},
		"startTime": rfc3339(now),
		"qosClass":  "Burstable",
		"containerStatuses": []obj{{"name": app, "image": "registry.example/team/" + app + ":v1.4.2",
			"imageID": "registry.example/team/" + app + "@sha256:" + fmt.Sprintf("%064x", len(app)),
			"ready":   ready == "True", "restartCount": 0, "started": phase == "Running", "state": state,
			"containerID": "containerd://" + fmt.Sprintf("%064x", len(node)+len(podIP))}},
	}})
}

// eventObject is a core/v1 Event as a kubelet or controller records it about a pod.
func eventObject(ns, pod, uid, reason, message, component, node string, now time.Time) []byte {
	return mustJSON(obj{
		"apiVersion": "v1", "kind": "Event",
		"metadata":       obj{"name": fmt.Sprintf("%s.%x", pod, now.UnixNano()), "namespace": ns},
		"involvedObject": obj{"kind": "Pod", "namespace": ns, "name": pod, "uid": uid, "apiVersion": "v1"},
		"reason":         reason, "message": message, "type": "Normal",
		"source":         obj{"component": component, "host": node},
		"firstTimestamp": rfc3339(now), "lastTimestamp": rfc3339(now), "count": 1,
		"reportingComponent": component, "reportingInstance": node,
	})
}

func deleteOptions(grace int, uid string) []byte {
	o := obj{"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace}
	if uid != "" {
		o["preconditions"] = obj{"uid": uid}
	}
	return mustJSON(o)
}
