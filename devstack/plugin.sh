#!/bin/bash
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
#
# devstack/plugin.sh: devstack calls this at each phase; the work is in
# lib/berth. Phases: stack install | post-config | extra | test-config,
# unstack, clean.

# NOTE: BERTH_DIR comes from settings; the path is only known at run time.
# shellcheck source=devstack/lib/berth
source "$BERTH_DIR/devstack/lib/berth"

# True when any Berth service runs on this node.
function is_berth_enabled {
    local service
    for service in b-plc b-api b-cond b-sch b-cpu; do
        if is_service_enabled "$service"; then
            return 0
        fi
    done
    return 1
}

if is_berth_enabled; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing Berth"
        install_berth

    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring Berth"
        configure_berth

    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Initializing and starting Berth"
        # NOTE: only the node with the databases initializes them; a
        # compute-only subnode just starts its agent.
        if is_service_enabled b-cond; then
            init_berth
        fi
        start_berth

    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        # NOTE: Berth brings no tempest plugin; its own functional tests
        # run from the tree (tox -e functional).
        :
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_berth
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_berth
    fi
fi
