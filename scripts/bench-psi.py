"""OpenMined PSI (PyPI openmined-psi) on the sets make bench uses for meishi's common friends.

Client and server in one process, the library's default compressed setting (GCS), revealing the
intersection to the client. Prints: client_size server_size seconds bytes intersection, where
bytes = setup + request + response as serialised. Usage: bench-psi.py NA NB COMMON RUNS
"""
import statistics
import sys
import time

import private_set_intersection.python as psi

na, nb, common, runs = (int(a) for a in sys.argv[1:5])
# The same shape as meishi's run: the client holds friends 0..na-1, the server na-common..na-common+nb-1.
client_items = [f"did:key:friend-{i}" for i in range(na)]
server_items = [f"did:key:friend-{i}" for i in range(na - common, na - common + nb)]
fpr = 1e-9
times, sizes, found = [], [], 0
for _ in range(runs):
    t0 = time.perf_counter()
    server = psi.server.CreateWithNewKey(True)
    client = psi.client.CreateWithNewKey(True)
    setup = server.CreateSetupMessage(fpr, len(client_items), server_items, psi.DataStructure.GCS)
    request = client.CreateRequest(client_items)
    response = server.ProcessRequest(request)
    found = len(client.GetIntersection(setup, response))
    times.append(time.perf_counter() - t0)
    sizes.append(len(setup.SerializeToString()) + len(request.SerializeToString()) + len(response.SerializeToString()))
print(f"{na} {nb} {statistics.median(times):.3f} {statistics.median(sizes)} {found}")
