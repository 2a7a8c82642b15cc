/**
 * The review workflow type (docs/interface.md: What the service does 1, 9): a pull request's review
 * as a RunAttemptWorkflow.
 *
 * - prepare: the pull request's changed files from GitHub give the coverage ledger (what the agent
 *   is given, what is skipped and why); the request carries the policy, custom instructions, the
 *   approved and enabled conventions of the organization and repository (with their ids, each
 *   recorded as given to the run), the output contract, a checkout of the head (cloned with an
 *   installation token), the approved secondary repositories read-only beside it (Checkouts) and
 *   the agent's credentials.
 *   Prepare also marks the run's "Bosun review" check run in progress.
 * - publish: `outputs/review.json`, kept in the blob store when the agent succeeded, decoded with
 *   the domain contract (nothing is posted from output that does not match); the plan (inline up
 *   to comment_limit, overflow, outside the diff, already posted, dismissed, resolved) is recorded
 *   together with the review's provider effect, keyed by the run, and a `github.review_delivery`
 *   row, in one transaction. Posting the review, linking its comments to findings and resolving
 *   threads is the delivery's (ReviewDelivery), so GitHub failing never runs the agent again.
 *   What the agent says the memories did (`memory_ids`, `suppressed`) is recorded with the plan,
 *   and, best effort, the dependencies the pull request shows are proposed as context
 *   suggestions (ContextDiscovery).
 *   With automatic_pr_description ENABLED, the agent's `description` is recorded as its own effect
 *   with the review's; the delivery puts it into the pull request's body between Bosun's markers
 *   (PrDescription), patched only when the body would change.
 *   A pull request whose head moved on since the run was queued is not reviewed at the old head
 *   (the push queued a newer review); its check run ends neutral.
 *
 * A run whose last attempt failed moves its check run to failure (`reportFailure`, an outbox row
 * the `bosun-effects` consumer posts; ReviewFailure says what it reads). An attempt
 * the Scheduler recovered by lease expiry (its worker died) is retried, not reported.
 *
 * Sandboxes that inject credentials (PLATFORM_CONTAINER) are refused for now with
 * `credential_injection_unsupported`: their grants need the provider's hosts, which the agent
 * connection does not record yet.
 */
import {
  AttemptError,
  type AttemptRun,
  type FailureReport,
  type PublishInput,
  type WorkflowType
} from "@bosun/actors/attempt/AttemptPorts"
import {
  type Memory,
  REVIEW_OUTPUT_PATH,
  type RepositoryConfiguration,
  ReviewOutput,
  type RunRequest
} from "@bosun/domain"
import { Effect, Option, Redacted, Schema } from "effect"
import { ProviderEffectsRepo } from "../../outbound/effects/ProviderEffectsRepo.ts"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { githubAttemptError } from "../../outbound/github/GitHubAttemptError.ts"
import { type ChangedFile, GitHubPulls, type PullDetails, type PullRef } from "../../outbound/github/GitHubPulls.ts"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { type CheckRun, GITHUB_CHECK_RUN } from "../../outbound/github/GithubEffects.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import {
  AgentConnectionsRepo,
  ConfigurationRepo,
  makeConfigFileReader,
  makeRunSettings,
  type ProviderCredentials,
  pathInstructionsFor,
  type RunSettings,
  renderPathInstructions
} from "../agentConnections/index.ts"
import { makeContextDiscovery } from "../contextSuggestions/index.ts"
import { MemoriesRepo, type MemoryFindingEffect } from "../memories/index.ts"
import { PullRequestsRepo, RepositoriesRepo } from "../repositories/index.ts"
import { cloneUrl, makeSecondaryCheckouts } from "../workItems/index.ts"
import {
  descriptionEffectKey,
  findingMarker,
  GITHUB_REVIEW_DELIVERY,
  type ReviewDeliveryPayload,
  type ReviewEffectRequest,
  reviewEffectKey,
  reviewMarker
} from "./ReviewDelivery.ts"
import { failureCheck, inProgressCheck, reviewCheckRun, supersededCheck } from "./ReviewFailure.ts"
import { ReviewFindingsRepo } from "./ReviewFindingsRepo.ts"
import { reviewInstructions, reviewPrompt } from "./ReviewInstructions.ts"
import {
  type Coverage,
  checkSummary,
  commentBody,
  coverageOf,
  planReview,
  type ReviewPlan,
  reviewBody
} from "./ReviewPlan.ts"
import { pathExclusion } from "./ReviewPolicy.ts"

export const REVIEW = "review"

const CHECKOUT = "repo"
const REVIEW_TIME_LIMIT_SECONDS = 1800

const fail = (code: string, message: string, retryable = false) => new AttemptError({ code, message, retryable })

const decodeOutput = Schema.decodeUnknownEffect(Schema.fromJsonString(ReviewOutput))

const fromGithub = githubAttemptError

/**
 * What the memories given to a review did, as its agent reports it: each raised finding citing a
 * memory in `memory_ids` was shaped by it (a finding already dismissed is not raised, so not
 * counted), each `suppressed` entry is a finding it kept out.
 */
export const memoryEffectsOf = (plan: ReviewPlan, output: ReviewOutput): ReadonlyArray<MemoryFindingEffect> => [
  ...plan.findings.flatMap((finding) =>
    finding.placement === "DISMISSED"
      ? []
      : [...new Set(finding.memory_ids ?? [])].map(
          (memoryId): MemoryFindingEffect => ({
            memoryId,
            effect: "SHAPED",
            fingerprint: finding.fingerprint,
            path: finding.path,
            note: finding.title
          })
        )
  ),
  ...(output.suppressed ?? []).map(
    (entry): MemoryFindingEffect => ({
      memoryId: entry.memory_id,
      effect: "SUPPRESSED",
      fingerprint: null,
      path: entry.path,
      note: entry.note
    })
  )
]

/** The `.bosun.yaml` path instructions for the files under review, as a prompt section (none when none match). */
const pathNotes = (entries: RepositoryConfiguration["path_instructions"], coverage: Coverage) => {
  const matches = pathInstructionsFor(
    coverage.reviewed.map((file) => file.path),
    entries
  )
  return matches.length === 0 ? [] : [renderPathInstructions(matches)]
}

/** The services the review's steps use, gathered once when the workflow type is built. */
const makeReviewServices = Effect.gen(function* () {
  return {
    config: yield* AppConfig,
    repositories: yield* RepositoriesRepo,
    configurations: yield* ConfigurationRepo,
    memories: yield* MemoriesRepo,
    connections: yield* AgentConnectionsRepo,
    findings: yield* ReviewFindingsRepo,
    effects: yield* ProviderEffectsRepo,
    app: yield* GitHubApp,
    pulls: yield* GitHubPulls,
    apps: yield* GithubAppsRepo,
    pullRequests: yield* PullRequestsRepo,
    outbox: yield* Outbox,
    secondaryCheckouts: (yield* makeSecondaryCheckouts).secondaryCheckouts,
    runSettings: yield* makeRunSettings,
    configFiles: yield* makeConfigFileReader,
    discovery: yield* makeContextDiscovery
  }
})

type ReviewServices = Effect.Success<typeof makeReviewServices>

const subjectOf = Effect.fnUntraced(function* (
  repositories: ReviewServices["repositories"],
  run: {
    readonly organizationId: string
    readonly repositoryId: string | null
    readonly pullRequestNumber: number | null
    readonly headSha: string | null
  }
) {
  if (run.repositoryId === null || run.pullRequestNumber === null || run.headSha === null) {
    return yield* fail("review_target_missing", "A review run names a repository, a pull request and its head")
  }
  const repository = yield* repositories.find(run.organizationId, run.repositoryId)
  if (Option.isNone(repository)) {
    return yield* fail("repository_missing", "The repository of this review is no longer connected")
  }
  const pr: PullRef = {
    organizationId: run.organizationId,
    repository: { owner: repository.value.owner, name: repository.value.name },
    number: run.pullRequestNumber
  }
  return {
    pr,
    repository: repository.value,
    repositoryId: run.repositoryId,
    headSha: run.headSha,
    ref: { organizationId: run.organizationId, repositoryId: run.repositoryId, number: run.pullRequestNumber }
  }
})

type ReviewSubject = Effect.Success<ReturnType<typeof subjectOf>>

/** The run's check run as a target of `reviewCheckRun`. */
const checkTarget = (runId: string, subject: { readonly pr: PullRef; readonly headSha: string }) => ({
  organizationId: subject.pr.organizationId,
  owner: subject.pr.repository.owner,
  name: subject.pr.repository.name,
  headSha: subject.headSha,
  runId
})

/** Writes the run's check run in a state (its own outbox row, posted by `bosun-effects`). */
const recordCheck = (
  outbox: ReviewServices["outbox"],
  runId: string,
  subject: { readonly pr: PullRef; readonly headSha: string },
  state: string,
  check: { readonly conclusion?: CheckRun["conclusion"]; readonly title: string; readonly summary: string }
) =>
  outbox
    .transaction(
      outbox.write(
        "bosun-effects",
        GITHUB_CHECK_RUN,
        reviewCheckRun(checkTarget(runId, subject), `${state}:${runId}`, check)
      )
    )
    .pipe(
      Effect.mapError((error) => fail("check_run_unrecorded", error.message, true)),
      Effect.asVoid
    )

/** What `reviewRunRequest` puts together: everything prepare gathered for the agent. */
interface ReviewRunInputs {
  readonly run: AttemptRun
  readonly subject: ReviewSubject
  readonly configuration: RepositoryConfiguration
  readonly settings: RunSettings
  readonly details: PullDetails
  readonly coverage: Coverage
  readonly conventions: ReadonlyArray<Memory>
  readonly secondary: Effect.Success<ReturnType<ReviewServices["secondaryCheckouts"]>>
  readonly token: Redacted.Redacted<string>
  readonly credentials: ProviderCredentials
}

/** The agent's run request for a review: its prompt, instructions, checkouts and credentials. */
const reviewRunRequest = (config: ReviewServices["config"], inputs: ReviewRunInputs): RunRequest => {
  const { run, subject, configuration, settings, details, coverage, secondary } = inputs
  return {
    run_id: run.runId,
    attempt_id: run.attemptId,
    agent: Option.match(config.runtime.reviewAgentProfile, {
      onNone: () => ({ kind: configuration.agent_provider }),
      onSome: (profile) => ({ kind: "CUSTOM" as const, profile })
    }),
    model: settings.model,
    ...(settings.reasoningEffort === undefined ? {} : { reasoning_effort: settings.reasoningEffort }),
    prompt: [
      reviewPrompt(
        {
          repository: `${subject.pr.repository.owner}/${subject.pr.repository.name}`,
          number: subject.pr.number,
          title: details.title,
          baseSha: run.baseSha ?? details.baseSha,
          headSha: subject.headSha,
          checkoutPath: CHECKOUT
        },
        coverage
      ),
      ...(secondary.note === null ? [] : [secondary.note]),
      ...pathNotes(configuration.path_instructions, coverage)
    ].join("\n\n"),
    instructions: reviewInstructions({
      policy: configuration.review_policy,
      customInstructions: configuration.custom_instructions,
      conventions: inputs.conventions.map((memory) => ({
        id: memory.id,
        convention: memory.convention,
        rationale: memory.rationale
      })),
      describePullRequest: configuration.automatic_pr_description === "ENABLED"
    }),
    repositories: [
      {
        id: subject.repositoryId,
        url: cloneUrl(config.githubApiUrl, subject.pr.repository.owner, subject.pr.repository.name),
        ref: `refs/pull/${subject.pr.number}/head`,
        sha: subject.headSha,
        path: CHECKOUT,
        credential: Redacted.value(inputs.token)
      },
      ...secondary.repositories
    ],
    mcp_servers: settings.mcpServers,
    skills: settings.skills,
    egress_tier: "STRICT",
    time_limit_seconds: REVIEW_TIME_LIMIT_SECONDS,
    credential_mode: "INLINE",
    provider_credentials: inputs.credentials
  }
}

const prepareReview = Effect.fnUntraced(function* (services: ReviewServices, run: AttemptRun) {
  const { config, configurations, connections, pulls } = services
  const subject = yield* subjectOf(services.repositories, run)
  // The repository's own file first: the configuration below overlays what it says.
  yield* Effect.mapError(services.configFiles.refresh(run.organizationId, subject.repository), fromGithub)
  const configuration = yield* configurations.effective(run.organizationId, subject.repositoryId)
  if (configuration.sandbox_provider === "PLATFORM_CONTAINER") {
    return yield* fail(
      "credential_injection_unsupported",
      "Reviews do not run on PLATFORM_CONTAINER sandboxes yet: choose EXTERNAL_RUNTIME or a hosted sandbox provider"
    )
  }
  const policy = configuration.review_policy
  const details = yield* Effect.mapError(pulls.details(subject.pr), fromGithub)
  const files = yield* Effect.mapError(pulls.files(subject.pr), fromGithub)
  const coverage = coverageOf(files, pathExclusion(policy.excluded_paths))
  // The repository's own connection when it has one, else the organization's.
  const own = yield* connections.credentials(run.organizationId, subject.repositoryId)
  const scope = Option.isSome(own) ? own : yield* connections.credentials(run.organizationId, null)
  if (Option.isNone(scope)) {
    return yield* fail(
      "agent_connection_missing",
      "No agent connection of this organization or repository has provider credentials"
    )
  }
  const settings = yield* services.runSettings.forRun(run.organizationId, subject.repositoryId)
  const token = yield* Effect.mapError(
    services.app.installationToken(run.organizationId, subject.pr.repository),
    fromGithub
  )
  // Recorded as given to this run: the memory's measured effect counts it.
  const conventions = yield* services.memories.forRun(run.organizationId, subject.repositoryId, {
    runId: run.runId,
    workflowType: REVIEW
  })
  // The approved secondary repositories, read-only beside the pull request's checkout.
  const secondary = yield* services.secondaryCheckouts(run.organizationId, configuration.secondary_repository_ids, [
    CHECKOUT
  ])
  // The pull request shows the review started; the same check run ends with its outcome.
  yield* recordCheck(services.outbox, run.runId, subject, "in_progress", inProgressCheck(subject.headSha))
  const request = reviewRunRequest(config, {
    run,
    subject,
    configuration,
    settings,
    details,
    coverage,
    conventions,
    secondary,
    token,
    credentials: scope.value.credentials
  })
  return {
    request,
    sandbox: {
      provider: configuration.sandbox_provider,
      instanceClass: "standard-2" as const,
      egressTier: "STRICT" as const
    },
    grants: [],
    model: settings.model,
    // What actually runs the review: the operator's review profile when one is set.
    provider: Option.match(config.runtime.reviewAgentProfile, {
      onNone: () => configuration.agent_provider,
      onSome: (profile) => `custom agent profile ${profile}`
    })
  }
})

/** The agent's `outputs/review.json`, decoded with the output contract. */
const readReviewOutput = Effect.fnUntraced(function* (file: PublishInput["file"]) {
  const bytes = yield* file(REVIEW_OUTPUT_PATH)
  return yield* decodeOutput(new TextDecoder().decode(bytes)).pipe(
    Effect.mapError((error) =>
      fail(
        "review_output_invalid",
        `The agent's review does not match the output contract: ${error.message.split("\n").slice(0, 3).join(" ")}`
      )
    )
  )
})

/** The review's plan against what earlier reviews of the pull request raised and the files changed since. */
const planAgainstHistory = Effect.fnUntraced(function* (
  services: ReviewServices,
  subject: ReviewSubject,
  input: {
    readonly output: ReviewOutput
    readonly configuration: RepositoryConfiguration
    readonly files: ReadonlyArray<ChangedFile>
    readonly coverage: Coverage
  }
) {
  const { files } = input
  const known = yield* services.findings.known(subject.ref)
  const previousHead = yield* services.findings.lastReviewedHead(subject.ref)
  const changed = Option.isNone(previousHead)
    ? files.map((changedFile) => changedFile.path)
    : yield* services.pulls
        .changedPaths(subject.pr, previousHead.value, subject.headSha)
        .pipe(Effect.orElseSucceed(() => files.map((changedFile) => changedFile.path)))
  return planReview({
    output: input.output,
    coverage: input.coverage,
    commentLimit: input.configuration.review_policy.comment_limit,
    known,
    changedSincePrevious: new Set(changed)
  })
})

/** The review's provider effect request: its body, inline comments and the threads it resolves. */
const reviewEffectRequest = (
  runId: string,
  headSha: string,
  output: ReviewOutput,
  plan: ReviewPlan,
  configuration: RepositoryConfiguration
): ReviewEffectRequest => ({
  commit_id: headSha,
  body: `${reviewBody(output.summary, plan, configuration.config_file?.error ?? null)}\n\n${reviewMarker(runId)}`,
  comments: plan.findings
    .filter((finding) => finding.placement === "INLINE")
    .map((finding) => ({
      fingerprint: finding.fingerprint,
      path: finding.path,
      body: `${commentBody(finding)}\n\n${findingMarker(finding.fingerprint)}`,
      line: finding.end_line,
      side: finding.side,
      ...(finding.start_line < finding.end_line ? { start_line: finding.start_line } : {})
    })),
  resolved: plan.resolved.map((finding) => finding.fingerprint),
  check_summary: checkSummary(plan)
})

/**
 * The plan, the effects and the delivery row commit together: GitHub is called only by the
 * delivery, so its failures never send the run (and its agent) round again.
 */
const recordReview = (
  services: ReviewServices,
  run: AttemptRun,
  subject: ReviewSubject,
  recorded: {
    readonly key: string
    readonly request: ReviewEffectRequest
    readonly output: ReviewOutput
    readonly plan: ReviewPlan
    readonly description: string
  }
) => {
  const { outbox, effects } = services
  const { plan, output, description } = recorded
  const delivery: ReviewDeliveryPayload = {
    organization_id: run.organizationId,
    run_id: run.runId,
    repository_id: subject.repositoryId,
    owner: subject.pr.repository.owner,
    name: subject.pr.repository.name,
    number: subject.pr.number,
    head_sha: subject.headSha
  }
  return outbox
    .transaction(
      Effect.gen(function* () {
        const begun = yield* effects.begin({
          organizationId: run.organizationId,
          runId: run.runId,
          kind: "github.review",
          idempotencyKey: recorded.key,
          request: recorded.request
        })
        // A publish of this run that raced this one recorded the review and its delivery.
        if (!begun) return
        yield* services.findings.recordPlan(subject.ref, {
          runId: run.runId,
          headSha: subject.headSha,
          summary: output.summary,
          plan
        })
        yield* services.memories.recordEffects(
          run.organizationId,
          run.runId,
          { repositoryId: subject.repositoryId, number: subject.pr.number },
          memoryEffectsOf(plan, output)
        )

        if (description !== "") {
          yield* effects.begin({
            organizationId: run.organizationId,
            runId: run.runId,
            kind: "github.pr_description",
            idempotencyKey: descriptionEffectKey(run.runId),
            request: { description }
          })
        }
        yield* outbox.write("bosun-effects", GITHUB_REVIEW_DELIVERY, delivery)
      })
    )
    .pipe(Effect.mapError((error) => fail("review_unrecorded", error.message, true)))
}

/**
 * Best effort: a dependency on a sibling repository noticed now is proposed as context; failing
 * to look changes nothing of the review (the next one looks again).
 */
const proposeContext = (
  discovery: ReviewServices["discovery"],
  run: AttemptRun,
  subject: ReviewSubject,
  files: ReadonlyArray<ChangedFile>,
  details: PullDetails
) =>
  discovery
    .discover({
      organizationId: run.organizationId,
      primary: subject.repository,
      headSha: subject.headSha,
      files,
      pullRequestText: `${details.title}\n${details.body}`
    })
    .pipe(
      Effect.tap((proposed) =>
        proposed.length === 0
          ? Effect.void
          : Effect.logInfo("context_suggestions_proposed").pipe(
              Effect.annotateLogs({
                org_id: run.organizationId,
                run_id: run.runId,
                secondary: proposed.map((entry) => `${entry.secondary_owner}/${entry.secondary_name}`).join(",")
              })
            )
      ),
      Effect.catchCause((cause) =>
        Effect.logWarning("context_discovery_failed", cause).pipe(
          Effect.annotateLogs({ org_id: run.organizationId, run_id: run.runId })
        )
      )
    )

const publishReview = Effect.fnUntraced(function* (services: ReviewServices, { run, file }: PublishInput) {
  const { pulls } = services
  const subject = yield* subjectOf(services.repositories, run)
  const key = reviewEffectKey(run.runId)
  // Recorded by an earlier run of this step: its delivery row was written with it.
  if (Option.isSome(yield* services.effects.find(run.organizationId, key))) return
  const details = yield* Effect.mapError(pulls.details(subject.pr), fromGithub)
  if (details.headSha !== subject.headSha) {
    yield* Effect.logInfo("review_superseded").pipe(
      Effect.annotateLogs({ run_id: run.runId, head_sha: subject.headSha, now_head_sha: details.headSha })
    )
    return yield* recordCheck(services.outbox, run.runId, subject, "superseded", {
      conclusion: "neutral",
      ...supersededCheck(subject.headSha, details.headSha)
    })
  }
  const output = yield* readReviewOutput(file)
  const configuration = yield* services.configurations.effective(run.organizationId, subject.repositoryId)
  const files = yield* Effect.mapError(pulls.files(subject.pr), fromGithub)
  const coverage = coverageOf(files, pathExclusion(configuration.review_policy.excluded_paths))
  const plan = yield* planAgainstHistory(services, subject, { output, configuration, files, coverage })
  const request = reviewEffectRequest(run.runId, subject.headSha, output, plan, configuration)
  const description = configuration.automatic_pr_description === "ENABLED" ? (output.description?.trim() ?? "") : ""
  yield* recordReview(services, run, subject, { key, request, output, plan, description })
  yield* proposeContext(services.discovery, run, subject, files, details)
})

const reportReviewFailure = Effect.fnUntraced(function* (services: ReviewServices, report: FailureReport) {
  const { outbox } = services
  const subject = yield* subjectOf(services.repositories, report.run)
  const slug = Option.getOrElse(yield* services.apps.slug(report.run.organizationId), () => "bosun")
  const { title, summary } = failureCheck(report, slug)
  const check = reviewCheckRun(checkTarget(report.run.runId, subject), `failed:${report.run.runId}`, {
    conclusion: "failure",
    title,
    summary
  })
  yield* outbox
    .transaction(
      Effect.andThen(
        outbox.write("bosun-effects", GITHUB_CHECK_RUN, check),
        services.pullRequests.setReviewStatus(report.run.organizationId, subject.ref, "FAILED")
      )
    )
    .pipe(Effect.mapError((error) => fail("failure_report_unrecorded", error.message, true)))
})

export const reviewWorkflow = Effect.gen(function* () {
  const services = yield* makeReviewServices
  const type: WorkflowType = {
    lane: "REVIEW",
    outputs: [REVIEW_OUTPUT_PATH],
    prepare: (run) => prepareReview(services, run),
    publish: (input) => publishReview(services, input)
  }
  const reportFailure: NonNullable<WorkflowType["reportFailure"]> = (report) => reportReviewFailure(services, report)

  return { [REVIEW]: { ...type, reportFailure } }
})
