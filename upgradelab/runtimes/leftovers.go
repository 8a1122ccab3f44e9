package runtimes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// ownerID names this lab process: host, pid and the process's start time (so a recycled pid
// is not mistaken for it).
func ownerID() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	start, err := processStart(os.Getpid())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), start), nil
}

// processStart is field 22 of /proc/PID/stat: the start time in clock ticks since boot.
func processStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields after it follow the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected form", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return fields[19], nil
}

// ownerAlive says whether the lab process an owner label names still runs. Owners on other
// hosts (a shared engine) count as alive: only they can tell.
func ownerAlive(owner string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	start, err := processStart(pid)
	return err == nil && start == parts[2]
}

// Leftovers counts what RemoveLeftovers removed.
type Leftovers struct {
	Containers, Networks, Volumes int
}

func (l Leftovers) String() string {
	return fmt.Sprintf("%d containers, %d networks, %d volumes", l.Containers, l.Networks, l.Volumes)
}

// RemoveLeftovers removes the containers, networks and volumes of lab runs whose process is
// gone (all of them, when all is set, live runs included).
func RemoveLeftovers(ctx context.Context, cli client.APIClient, all bool) (Leftovers, error) {
	var n Leftovers
	var errs []error
	gone := func(labels map[string]string) bool {
		owner, ok := labels[labelOwner]
		return ok && (all || !ownerAlive(owner))
	}
	filter := client.Filters{}.Add("label", labelOwner)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return n, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if gone(c.Labels) {
			if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
				errs = append(errs, err)
				continue
			}
			n.Containers++
		}
	}
	nws, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return n, fmt.Errorf("list networks: %w", err)
	}
	for _, nw := range nws.Items {
		if gone(nw.Labels) {
			if _, err := cli.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{}); err != nil {
				errs = append(errs, err)
				continue
			}
			n.Networks++
		}
	}
	vols, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: filter})
	if err != nil {
		return n, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vols.Items {
		if gone(v.Labels) {
			if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
				errs = append(errs, err)
				continue
			}
			n.Volumes++
		}
	}
	return n, errors.Join(errs...)
}

// Clean removes leftovers through a new connection to the engine (upgradelab clean).
func Clean(ctx context.Context, all bool) (Leftovers, error) {
	p, err := connect(ctx)
	if err != nil {
		return Leftovers{}, err
	}
	return RemoveLeftovers(ctx, p.Client(), all)
}
