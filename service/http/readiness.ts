/**
 * Whether this Service process wants new work, as `GET /readyz` answers it to a load balancer:
 * ready from the start, draining once a stop began (docs/deploy.md, "Rolling restart"). Liveness
 * (`/healthz`) is not this: a draining replica is alive and finishes what it has.
 */
export class Readiness {
  #draining = false;

  get draining(): boolean {
    return this.#draining;
  }

  /** From now on `/readyz` answers 503: the load balancer sends new requests to the other replicas. */
  drain(): void {
    this.#draining = true;
  }
}
