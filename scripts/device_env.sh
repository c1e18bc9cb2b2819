# Source on the lent accelerator machine: installs the kit's dependencies from carried wheels
# (.whl-tpu, built by `make device-wheels`) under /tmp/site, after the machine's own JAX.
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site .whl-tpu/*.whl || return 1
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site:$PWD
export PATH=/tmp/site/bin:$PATH JUPYTER_RUNTIME_DIR=/tmp/jupyter-runtime MPLCONFIGDIR=/tmp/mpl
export TQDM_DISABLE=1 PYTHONUNBUFFERED=1
